package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/drivers/podman/podmantest"
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
	const br, subnet = "drvit6", "172.26.126.0/24"
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", br).Run()
		for _, r := range [][]string{
			{"filter", "FORWARD", "-i", br, "-j", "ACCEPT"},
			{"filter", "FORWARD", "-o", br, "-j", "ACCEPT"},
			{"nat", "POSTROUTING", "-s", subnet, "!", "-o", br, "-j", "MASQUERADE"},
			{"nat", "POSTROUTING", "-s", "127.0.0.0/8", "-o", br, "-j", "MASQUERADE"},
		} {
			exec.Command("iptables", append([]string{"-w", "-t", r[0], "-D", r[1]}, r[2:]...)...).Run()
		}
	})

	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1}, "log_level": "INFO",
	})
	srv.waitReady(false)
	clientDir := t.TempDir()
	t.Cleanup(func() { killProcsUnder(clientDir) })
	cli := startAgent(t, clientDir, []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"client":             map[string]any{"bridge_network_name": br, "bridge_network_subnet": subnet},
		"leave_on_interrupt": false,
		"log_level":          "INFO",
	})
	waitFor(t, 30*time.Second, "client node ready with podman", func() bool {
		nodes, _, err := srv.client.Nodes().List(&api.QueryOptions{Params: map[string]string{"resources": "true"}})
		if err != nil || len(nodes) != 1 || nodes[0].Status != "ready" {
			return false
		}
		d := nodes[0].Drivers["podman"]
		return d != nil && d.Detected && d.Healthy
	})

	job := api.NewServiceJob("pbridge", "pbridge", "global", 50)
	job.Datacenters = []string{"*"}
	tg := api.NewTaskGroup("g", 2)
	tg.Networks = []*api.NetworkResource{{Mode: "bridge", DynamicPorts: []api.Port{{Label: "http", To: 8080}}}}
	task := api.NewTask("t", "podman")
	// A hostname of its own is kept in the namespace (docker would refuse
	// it in a bridge group).
	task.Config = map[string]any{"image": img, "hostname": "pbridge-task"}
	task.Resources = &api.Resources{CPU: ptr(50), MemoryMB: ptr(64)}
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var allocs []*api.AllocationListStub
	waitFor(t, 90*time.Second, "two allocations running", func() bool {
		allocs = srv.allocsOf("pbridge")
		n := 0
		for _, a := range allocs {
			if a.ClientStatus == "failed" {
				full, _, _ := srv.client.Allocations().Info(a.ID, nil)
				var msgs []string
				for name, ts := range full.TaskStates {
					for _, ev := range ts.Events {
						msgs = append(msgs, name+": "+ev.Type+" "+ev.DisplayMessage)
					}
				}
				t.Fatalf("allocation failed:\n%s", strings.Join(msgs, "\n"))
			}
			if a.ClientStatus == "running" {
				n++
			}
		}
		return n == 2 && len(allocs) == 2
	})

	addrs, bodies, pids := map[string]string{}, map[string]string{}, map[string]int{}
	for _, a := range allocs {
		addr := hostPort(t, srv.client, a.ID)
		addrs[a.ID] = addr
		var body string
		var err error
		waitFor(t, 20*time.Second, "alloc "+a.ID+" answering on "+addr, func() bool {
			body, err = get(addr)
			return err == nil
		})
		f := strings.Fields(body)
		if len(f) != 3 || f[0] != a.ID {
			t.Fatalf("%s answered %q, want its own allocation %s", addr, body, a.ID)
		}
		if !strings.HasPrefix(f[1], "172.26.126.") || f[2] != "lo,eth0" {
			t.Fatalf("container sees address %q and interfaces %q, want an address of %s and lo,eth0", f[1], f[2], subnet)
		}
		full, _, err := srv.client.Allocations().Info(a.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if full.NetworkStatus == nil || full.NetworkStatus.Address != f[1] {
			t.Fatalf("allocation's network status %+v, want %s", full.NetworkStatus, f[1])
		}
		if _, err := pcli.ContainerInspect(context.Background(), "drover-pause-"+a.ID); err == nil {
			t.Fatalf("allocation %s has a pause container; podman tasks join the namespace by path", a.ID)
		}
		cs := podmanContainers(t, pcli, a.ID)
		if len(cs) != 1 {
			t.Fatalf("allocation %s has %d containers, want 1", a.ID, len(cs))
		}
		info, err := pcli.ContainerInspect(context.Background(), cs[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.Hostname != "pbridge-task" {
			t.Fatalf("container hostname %q, want the task's", info.Config.Hostname)
		}
		pids[a.ID] = info.State.Pid
		taskNS := fmt.Sprintf("/proc/%d/ns/net", info.State.Pid)
		if nsInode(t, taskNS) != netnsInode(t, a.ID) {
			t.Fatalf("task container of %s is not in the allocation's namespace", a.ID)
		}
		bodies[a.ID] = body
	}
	if bodies[allocs[0].ID] == bodies[allocs[1].ID] {
		t.Fatalf("both allocations answered %q", bodies[allocs[0].ID])
	}

	// SIGKILL the client agent and start it again: the same containers
	// and namespaces, and the tasks answer.
	inodes := map[string]uint64{}
	for _, a := range allocs {
		inodes[a.ID] = netnsInode(t, a.ID)
	}
	cli.kill()
	cli.start()
	waitFor(t, 30*time.Second, "client agent back", func() bool {
		_, err := cli.client.Agent().Self()
		return err == nil
	})
	waitFor(t, 30*time.Second, "allocations running after the restart", func() bool {
		for _, a := range allocs {
			full, _, err := cli.client.Allocations().Info(a.ID, nil)
			if err != nil || full.ClientStatus != "running" {
				return false
			}
		}
		return true
	})
	for _, a := range allocs {
		cs := podmanContainers(t, pcli, a.ID)
		if len(cs) != 1 {
			t.Fatalf("allocation %s has %d containers after the restart", a.ID, len(cs))
		}
		if info, err := pcli.ContainerInspect(context.Background(), cs[0].ID); err != nil || info.State.Pid != pids[a.ID] {
			t.Fatalf("container of %s was replaced after the agent restart", a.ID)
		}
		if got := netnsInode(t, a.ID); got != inodes[a.ID] {
			t.Fatalf("namespace of %s was recreated", a.ID)
		}
		if body, err := get(addrs[a.ID]); err != nil || body != bodies[a.ID] {
			t.Fatalf("after the restart %s answered %q, %v; want %q", addrs[a.ID], body, err, bodies[a.ID])
		}
	}

	if _, _, err := srv.client.Jobs().Deregister("pbridge", false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "containers, namespaces and veths gone", func() bool {
		for _, a := range allocs {
			if _, err := os.Stat("/var/run/netns/" + a.ID); err == nil {
				return false
			}
			if len(podmanContainers(t, pcli, a.ID)) != 0 {
				return false
			}
		}
		return !strings.Contains(cmdOut(t, "ip", "-o", "link", "show", "master", br), "dv")
	})
}
