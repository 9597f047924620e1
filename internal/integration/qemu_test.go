package integration

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/drivers/qemu/qemutest"
)

// The qemu driver end to end (skipped without qemu on a laptop, failed in
// CI): a job boots a VM from the test image (read through the agent's
// image_paths allow list, with -snapshot so the cached image is never
// written); its serial console is in `alloc logs`; its guest HTTP server
// answers on the allocation's port; a client agent killed with SIGKILL
// and started again re-attaches to the same qemu process (not restarted);
// `job stop` powers the guest down through QMP within the kill timeout.
// (`alloc logs` and stats ask the client agent: servers do not forward
// client requests yet.)

const qemuJob = `
job "vm" {
  datacenters = ["*"]
  group "g" {
    network {
      port "http" {}
    }
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "vm" {
      driver       = "qemu"
      kill_timeout = "90s"
      config {
        image_path        = %q
        args              = ["-snapshot"]
        graceful_shutdown = true
        port_map {
          http = %d
        }
      }
      resources {
        cpu    = 100
        memory = 256
      }
    }
  }
}
`

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// qemuPIDs lists the qemu processes running in an allocation's directory.
func qemuPIDs(allocID string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if !strings.HasPrefix(string(comm), "qemu-system") {
			continue
		}
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil && strings.Contains(cwd, allocID) && pidAlive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func TestQemuJobBootsReattachesAndStopsGracefully(t *testing.T) {
	qemutest.Binary(t)
	img := qemutest.Image(t)

	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1}, "log_level": "INFO",
	})
	srv.waitReady(false)
	clientDir := t.TempDir()
	cli := startAgent(t, clientDir, []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"leave_on_interrupt": false,
		"log_level":          "INFO",
		// The job's kill_timeout (90 s) is kept whole, not capped at the
		// default 30 s: the graceful stop is timed against it.
		"client": map[string]any{"max_kill_timeout": "2m"},
		"plugin": map[string]any{"qemu": map[string]any{"config": map[string]any{
			"image_paths": []string{filepath.Dir(img)},
		}}},
	})
	var node *api.Node
	nodeReady := func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		if err != nil || len(nodes) != 1 || nodes[0].Status != "ready" {
			return false
		}
		n, _, err := srv.client.Nodes().Info(nodes[0].ID, nil)
		if err != nil {
			return false
		}
		node = n
		d := n.Drivers["qemu"]
		return d != nil && d.Detected && d.Healthy
	}
	waitFor(t, 30*time.Second, "client node ready with qemu healthy", nodeReady)
	if v := node.Attributes["driver.qemu.version"]; v == "" || node.Attributes["driver.qemu"] != "1" {
		t.Fatalf("node attributes: driver.qemu=%q driver.qemu.version=%q", node.Attributes["driver.qemu"], v)
	}

	dir, allocID := runVMJob(t, srv, "vm", fmt.Sprintf(qemuJob, img, qemutest.GuestHTTPPort))
	var pids []int
	t.Cleanup(func() {
		// A failed run must not leave the VM behind (the client agent
		// leaves tasks running when it stops).
		for _, pid := range qemuPIDs(allocID) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	var logs string
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		out, code := cli.cli(dir, "alloc", "logs", allocID, "vm")
		if code == 0 && strings.Contains(out, qemutest.ReadyMarker) && strings.Contains(out, qemutest.BootMarker) {
			break
		}
		logs = out
		if time.Now().After(deadline) {
			errs, _ := cli.cli(dir, "alloc", "logs", "-stderr", allocID, "vm")
			t.Fatalf("no boot on the serial console in `alloc logs` after 3m (exit %d):\n%s\nstderr:\n%s", code, tailString(logs, 1500), tailString(errs, 1500))
		}
	}
	al, _, err := srv.client.Allocations().Info(allocID, nil)
	if err != nil {
		t.Fatal(err)
	}
	var port *api.PortMapping
	for i, p := range al.AllocatedResources.Shared.Ports {
		if p.Label == "http" {
			port = &al.AllocatedResources.Shared.Ports[i]
		}
	}
	if port == nil || port.Value == 0 {
		t.Fatalf("no http port: %+v", al.AllocatedResources.Shared.Ports)
	}
	url := "http://" + net.JoinHostPort(port.HostIP, strconv.Itoa(port.Value)) + "/"
	served := func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(b)) == qemutest.HTTPMarker
	}
	waitFor(t, 30*time.Second, "the guest's HTTP server on "+url, served)
	pids = qemuPIDs(allocID)
	if len(pids) != 1 {
		t.Fatalf("want one qemu process for the allocation, got %v", pids)
	}
	// The VM's use, as the stats API reports it.
	u, err := cli.client.Allocations().Stats(al, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ts := u.Tasks["vm"]; ts == nil || ts.ResourceUsage == nil || ts.ResourceUsage.MemoryStats.RSS < 16<<20 {
		t.Fatalf("stats of the running VM: %+v", ts)
	}

	// The client agent dies; the VM does not, and the restarted agent
	// re-attaches to it.
	cli.kill()
	if !pidAlive(pids[0]) {
		t.Fatal("the VM died with the client agent")
	}
	cli.start()
	waitFor(t, 60*time.Second, "client node ready again", nodeReady)
	waitFor(t, 30*time.Second, "the guest still serving after the restart", served)
	if got := qemuPIDs(allocID); len(got) != 1 || got[0] != pids[0] {
		t.Fatalf("qemu processes after the restart: %v, want the same %d", got, pids[0])
	}
	al, _, err = srv.client.Allocations().Info(allocID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ts := al.TaskStates["vm"]; ts == nil || ts.State != "running" || ts.Restarts != 0 {
		t.Fatalf("task state after the restart: %+v", ts)
	}

	// Stop: the guest powers down (QMP system_powerdown), well within the
	// 90 s kill timeout, and its console says so. The restarted agent
	// must hold the VM again first (its stats answer from the task's
	// handle), or the stop's time would include its restore. The bound
	// (45 s) is half the kill timeout: a stop that waited for the kill
	// takes 90 s, a slow guest on a loaded machine a few seconds.
	waitFor(t, 60*time.Second, "the restarted agent holding the VM", func() bool {
		u, err := cli.client.Allocations().Stats(al, nil)
		return err == nil && u.Tasks["vm"] != nil
	})
	start := time.Now()
	if out, code := srv.cli(dir, "job", "stop", "-detach", "vm"); code != 0 {
		t.Fatalf("job stop: exit %d\n%s", code, out)
	}
	waitFor(t, 120*time.Second, "the qemu process gone", func() bool { return !pidAlive(pids[0]) })
	if took := time.Since(start); took > 45*time.Second {
		t.Fatalf("stopping the VM took %s", took)
	}
	waitFor(t, 20*time.Second, "the power-down on the console", func() bool {
		out, code := cli.cli(dir, "alloc", "logs", allocID, "vm")
		return code == 0 && strings.Contains(out, qemutest.PowerdownMarker)
	})
	waitFor(t, 20*time.Second, "the allocation complete", func() bool {
		al, _, err := srv.client.Allocations().Info(allocID, nil)
		return err == nil && al.ClientStatus == "complete"
	})
}
