package integration

import (
	"context"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers/podman/podmantest"
	"github.com/drover-project/drover/internal/testnet"
)

// Podman tasks of a bridge group join the allocation's namespace by its
// path (no pause container): two allocations each answer on their host
// port with their own allocation ID and bridge address, seeing only lo
// and eth0, from a container whose namespace is the mounted one. A client
// agent SIGKILLed and restarted keeps namespaces and containers; stopping
// the job removes containers, namespaces and veths.
func TestBridgePodman(t *testing.T) {
	requireBridge(t)
	pcli := podmantest.Client(t)
	img := helloImage(t, pcli)
	nw := testnet.Claim(t) // bridge and subnet of this run alone
	br, subnet := nw.Bridge, nw.Subnet
	cleanupBridge(t, br, subnet)
	srv, cli := startBridgeCluster(t, br, subnet, "podman")

	// A hostname of its own is kept in the namespace (docker would refuse
	// it in a bridge group).
	registerBridgeJob(t, srv, "pbridge", "podman", map[string]any{"image": img, "hostname": "pbridge-task"})
	allocs := waitAllocsRunning(t, srv, "pbridge", 2, 90*time.Second)

	addrs, bodies, pids := map[string]string{}, map[string]string{}, map[string]int{}
	for _, a := range allocs {
		h := checkHello(t, srv.client, a.ID, nw.Prefix, subnet)
		addrs[a.ID] = h.addr
		if _, err := pcli.ContainerInspect(context.Background(), "drover-pause-"+a.ID); err == nil {
			t.Fatalf("allocation %s has a pause container; podman tasks join the namespace by path", a.ID)
		}
		info, _ := taskContainer(t, pcli, a.ID)
		if info.Config.Hostname != "pbridge-task" {
			t.Fatalf("container hostname %q, want the task's", info.Config.Hostname)
		}
		pids[a.ID] = info.State.Pid
		bodies[a.ID] = h.body
	}
	if bodies[allocs[0].ID] == bodies[allocs[1].ID] {
		t.Fatalf("both allocations answered %q", bodies[allocs[0].ID])
	}

	// SIGKILL the client agent and start it again: the same containers
	// and namespaces, and the tasks answer.
	restartClientAgent(t, cli, allocs, nil)
	for _, a := range allocs {
		cs := podmanContainers(t, pcli, a.ID)
		if len(cs) != 1 {
			t.Fatalf("allocation %s has %d containers after the restart", a.ID, len(cs))
		}
		if info, err := pcli.ContainerInspect(context.Background(), cs[0].ID); err != nil || info.State.Pid != pids[a.ID] {
			t.Fatalf("container of %s was replaced after the agent restart", a.ID)
		}
		if body, err := get(addrs[a.ID]); err != nil || body != bodies[a.ID] {
			t.Fatalf("after the restart %s answered %q, %v; want %q", addrs[a.ID], body, err, bodies[a.ID])
		}
	}

	if _, _, err := srv.client.Jobs().Deregister("pbridge", false, nil); err != nil {
		t.Fatal(err)
	}
	waitBridgeGone(t, br, "containers, namespaces and veths gone", 60*time.Second, allocs, func(allocID string) bool {
		return len(podmanContainers(t, pcli, allocID)) == 0
	})
}
