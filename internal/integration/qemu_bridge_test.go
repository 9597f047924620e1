package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers/qemu/qemutest"
	"github.com/drover-project/drover/internal/testnet"
)

const qemuBridgeJob = `
job "vmbridge" {
  datacenters = ["*"]
  group "g" {
    network {
      mode = "bridge"
      port "http" {
        to = 8080
      }
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
      kill_timeout = "5s"
      config {
        image_path = %q
        args       = ["-snapshot"]
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

// A qemu task of a bridge group runs in the allocation's network
// namespace: qemu's user network forwards the allocation's address and the
// port's `to` to the guest, so the guest's HTTP server answers on the
// group port's host address and port (through the client's port mapping);
// stopping the job ends the VM and removes the namespace. (Booting the
// guest under TCG dominates the run time.)
func TestBridgeQemu(t *testing.T) {
	requireBridge(t)
	qemutest.Binary(t)
	img := qemutest.Image(t)
	nw := testnet.Claim(t) // bridge and subnet of this run alone
	br, subnet := nw.Bridge, nw.Subnet
	cleanupBridge(t, br, subnet)
	a := startAgent(t, "", []string{"-dev"}, map[string]any{
		"client": map[string]any{"bridge_network_name": br, "bridge_network_subnet": subnet},
		"plugin": map[string]any{"qemu": map[string]any{"config": map[string]any{
			"image_paths": []string{filepath.Dir(img)},
		}}},
	})
	a.waitReady(true)
	requireExecDriver(t, a, "qemu")

	dir, allocID := runVMJob(t, a, "vmbridge", fmt.Sprintf(qemuBridgeJob, img, qemutest.GuestHTTPPort))
	t.Cleanup(func() {
		for _, pid := range qemuPIDs(allocID) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	pids := qemuPIDs(allocID)
	if len(pids) != 1 {
		t.Fatalf("want one qemu process for the allocation, got %v", pids)
	}
	if nsInode(t, fmt.Sprintf("/proc/%d/ns/net", pids[0])) != netnsInode(t, allocID) {
		t.Fatalf("qemu does not run in the allocation's network namespace")
	}
	full, _, err := a.client.Allocations().Info(allocID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if full.NetworkStatus == nil || !strings.HasPrefix(full.NetworkStatus.Address, nw.Prefix) {
		t.Fatalf("allocation's network status %+v, want an address of %s", full.NetworkStatus, subnet)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pids[0]))
	if fwd := fmt.Sprintf("hostfwd=tcp:%s:8080-:%d", full.NetworkStatus.Address, qemutest.GuestHTTPPort); !strings.Contains(string(cmdline), fwd) {
		t.Fatalf("qemu's command line %q lacks %s", strings.ReplaceAll(string(cmdline), "\x00", " "), fwd)
	}

	addr := hostPort(t, a.client, allocID)
	waitFor(t, 3*time.Minute, "the guest's HTTP server on "+addr, func() bool {
		body, err := get(addr)
		return err == nil && body == qemutest.HTTPMarker
	})

	if out, code := a.cli(dir, "job", "stop", "-detach", "vmbridge"); code != 0 {
		t.Fatalf("job stop: exit %d\n%s", code, out)
	}
	waitFor(t, 30*time.Second, "the qemu process and the namespace gone", func() bool {
		_, err := os.Stat("/var/run/netns/" + allocID)
		return !pidAlive(pids[0]) && err != nil
	})
}
