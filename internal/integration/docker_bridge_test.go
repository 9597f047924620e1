package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
	"github.com/drover-project/drover/internal/testnet"
)

// helloImage imports a FROM-scratch image whose entrypoint is the hello
// server of bridge_test.go.
func helloImage(t *testing.T, cli *client.Client) string {
	t.Helper()
	const ref = "drover-bridge-hello:test"
	bin, err := os.ReadFile(buildHello(t))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "hello", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(bin); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: &buf, SourceName: "-"}, ref,
		image.ImportOptions{Changes: []string{`ENTRYPOINT ["/hello"]`}})
	if err != nil {
		t.Fatalf("import %s: %v", ref, err)
	}
	var out bytes.Buffer
	_, _ = out.ReadFrom(rc)
	rc.Close()
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		t.Fatalf("%s missing after import: %v\n%s", ref, err, out.String())
	}
	return ref
}

// pauseRunning reports whether the allocation's pause container exists
// and, if so, its PID.
func pauseOf(t *testing.T, cli *client.Client, allocID string) (int, bool) {
	t.Helper()
	info, err := cli.ContainerInspect(context.Background(), "drover-pause-"+allocID)
	if err != nil {
		return 0, false
	}
	return info.State.Pid, true
}

// Docker tasks of a bridge group join the allocation's namespace through
// a pause container: two allocations each answer on their host port with
// their own allocation ID and bridge address, seeing only lo and eth0; the
// mounted namespace is the pause container's. A client agent SIGKILLed
// and restarted keeps pause container, namespace and answers; stopping
// the job removes task and pause containers and the namespaces.
func TestBridgeDocker(t *testing.T) {
	requireBridge(t)
	dcli := dockertest.Client(t)
	img := helloImage(t, dcli)
	nw := testnet.Claim(t) // bridge and subnet of this run alone
	br, subnet := nw.Bridge, nw.Subnet
	cleanupBridge(t, br, subnet)
	srv, cli := startBridgeCluster(t, br, subnet, "docker")

	registerBridgeJob(t, srv, "dbridge", "docker", map[string]any{"image": img})
	allocs := waitAllocsRunning(t, srv, "dbridge", 2, 90*time.Second)

	addrs, bodies := map[string]string{}, map[string]string{}
	for _, a := range allocs {
		h := checkHello(t, srv.client, a.ID, nw.Prefix, subnet)
		addrs[a.ID] = h.addr
		pid, ok := pauseOf(t, dcli, a.ID)
		if !ok {
			t.Fatalf("allocation %s has no pause container", a.ID)
		}
		if netnsInode(t, a.ID) != nsInode(t, fmt.Sprintf("/proc/%d/ns/net", pid)) {
			t.Fatalf("/var/run/netns/%s is not the pause container's namespace", a.ID)
		}
		// The task container itself is in that namespace, where eth0
		// carries the allocation's bridge address.
		_, taskNS := taskContainer(t, dcli, a.ID)
		if out := cmdOut(t, "nsenter", "--net="+taskNS, "ip", "-o", "-4", "addr", "show", "dev", "eth0"); !strings.Contains(out, " "+h.ip+"/24 ") {
			t.Fatalf("the task's eth0 has %q, want %s", out, h.ip)
		}
		bodies[a.ID] = h.body
	}
	if bodies[allocs[0].ID] == bodies[allocs[1].ID] {
		t.Fatalf("both allocations answered %q", bodies[allocs[0].ID])
	}

	// SIGKILL the client agent and start it again: the same pause
	// containers and namespaces, and the tasks answer.
	pids := map[string]int{}
	for _, a := range allocs {
		pids[a.ID], _ = pauseOf(t, dcli, a.ID)
	}
	restartClientAgent(t, cli, allocs, nil)
	for _, a := range allocs {
		if pid, ok := pauseOf(t, dcli, a.ID); !ok || pid != pids[a.ID] {
			t.Fatalf("pause container of %s was replaced (pid %d, was %d)", a.ID, pid, pids[a.ID])
		}
		if body, err := get(addrs[a.ID]); err != nil || body != bodies[a.ID] {
			t.Fatalf("after the restart %s answered %q, %v; want %q", addrs[a.ID], body, err, bodies[a.ID])
		}
	}

	if _, _, err := srv.client.Jobs().Deregister("dbridge", false, nil); err != nil {
		t.Fatal(err)
	}
	waitBridgeGone(t, br, "task and pause containers and namespaces gone", 60*time.Second, allocs, func(allocID string) bool {
		_, paused := pauseOf(t, dcli, allocID)
		return !paused && len(dockerContainers(t, dcli, allocID)) == 0
	})
}

func nsInode(t *testing.T, path string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}
