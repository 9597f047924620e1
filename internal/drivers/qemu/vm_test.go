package qemu

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/qemu/qemutest"
	"github.com/drover-project/drover/internal/structs"
	"github.com/drover-project/drover/internal/testport"
)

// These tests boot real virtual machines from the image qemutest builds
// (skipped without qemu on a laptop, failed in CI).

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	p, err := testport.Take()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// vmTask lays out an allocation directory with the image in the task's
// local/ directory and returns the task's config.
func vmTask(t *testing.T, img string, config map[string]any) *drivers.TaskConfig {
	alloc := t.TempDir()
	task := filepath.Join(alloc, "vm")
	logs := filepath.Join(alloc, "alloc", "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	qemutest.CopyImage(t, img, filepath.Join(task, "local"), "disk.img")
	config["image_path"] = "local/disk.img"
	// The allocation ID names the task's cgroup, which is machine-wide: it
	// is unique per test run (t.TempDir's base, "001", is not), so two
	// runs of these tests at once never share, and kill, each other's VM.
	allocID := filepath.Base(filepath.Dir(alloc)) + "-" + filepath.Base(alloc)
	return &drivers.TaskConfig{
		ID: allocID + "/vm", AllocID: allocID, Name: "vm",
		Config: config, Env: map[string]string{"PATH": "/usr/bin:/bin"},
		AllocDir: alloc, TaskDir: task,
		Logs:      &drivers.LogConfig{Dir: logs, MaxFiles: 2, MaxFileSizeMB: 5},
		Resources: &structs.AllocatedTaskResources{Memory: structs.AllocatedMemoryResources{MemoryMB: 256}},
	}
}

func serial(cfg *drivers.TaskConfig) string {
	b, _ := os.ReadFile(filepath.Join(cfg.Logs.Dir, "vm.stdout.0"))
	return string(b)
}

func waitSerial(t *testing.T, cfg *drivers.TaskConfig, d time.Duration, marker string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(serial(cfg), marker) {
		if time.Now().After(deadline) {
			errb, _ := os.ReadFile(filepath.Join(cfg.Logs.Dir, "vm.stderr.0"))
			t.Fatalf("no %q on the serial console after %s; console:\n%s\nstderr:\n%s", marker, d, tailOf(serial(cfg), 2000), errb)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func exitOf(t *testing.T, d *Driver, id string, within time.Duration) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	ch, err := d.WaitTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		t.Fatalf("task %s did not exit within %s", id, within)
	}
	return nil
}

// A VM boots from the image under TCG: its serial console reaches the
// task's log file, its guest port answers through the allocation's host
// port, its stats show the qemu process; a second driver (a restarted
// agent) re-attaches to the same VM, and a graceful stop powers the guest
// down through QMP well within the kill timeout, with exit code 0.
func TestVMBootsServesAndPowersDownGracefully(t *testing.T) {
	bin := qemutest.Binary(t)
	img := qemutest.Image(t)
	port := freePort(t)
	cfg := vmTask(t, img, map[string]any{
		"graceful_shutdown": true,
		"port_map":          map[string]any{"http": qemutest.GuestHTTPPort},
	})
	cfg.Ports = structs.AllocatedPorts{{Label: "http", Value: port, To: qemutest.GuestHTTPPort, HostIP: "127.0.0.1"}}

	d := New(Config{Binary: bin})
	h, err := d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	waitSerial(t, cfg, 3*time.Minute, qemutest.ReadyMarker)
	if s := serial(cfg); !strings.Contains(s, "SYSLINUX") || !strings.Contains(s, qemutest.BootMarker) {
		t.Fatalf("the console does not show the image's boot loader and the guest's init:\n%s", tailOf(s, 2000))
	}

	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	waitFor(t, 30*time.Second, "the guest's HTTP server through the forwarded port", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(b)) == qemutest.HTTPMarker
	})

	u, err := d.TaskStats(context.Background(), cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.Memory.RSS < 16<<20 || u.CPU.Percent <= 0 {
		t.Fatalf("stats of a booted VM: rss %d, cpu %.1f%%", u.Memory.RSS, u.CPU.Percent)
	}

	st, _ := d.InspectTask(cfg.ID)
	d2 := New(Config{Binary: bin})
	if err := d2.RecoverTask(&drivers.TaskHandle{Version: h.Version, Config: cfg, State: h.State, DriverState: h.DriverState}); err != nil {
		t.Fatalf("recover: %v", err)
	}
	st2, err := d2.InspectTask(cfg.ID)
	if err != nil || st2.State != drivers.TaskStateRunning || len(st2.PIDs) == 0 || st2.PIDs[0] != st.PIDs[0] {
		t.Fatalf("recovered status %+v (%v), want the running VM %v", st2, err, st.PIDs)
	}

	const killTimeout = 60 * time.Second
	start := time.Now()
	if err := d2.StopTask(cfg.ID, killTimeout, "SIGINT"); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	r := exitOf(t, d2, cfg.ID, 10*time.Second)
	if r.ExitCode != 0 || r.Signal != 0 {
		t.Fatalf("graceful stop: exit %+v, want 0 (the guest powered off)", r)
	}
	if took >= killTimeout/2 {
		t.Fatalf("graceful stop took %s", took)
	}
	if !strings.Contains(serial(cfg), qemutest.PowerdownMarker) {
		t.Fatalf("the guest never saw the power button:\n%s", tailOf(serial(cfg), 1000))
	}
	if _, err := os.Stat(filepath.Join(cfg.TaskDir, monitorSocket)); err == nil {
		// qemu removes it on a clean exit; DestroyTask would otherwise.
		t.Logf("monitor socket left after exit")
	}
	if err := d2.DestroyTask(cfg.ID, false); err != nil {
		t.Fatal(err)
	}
	for _, pid := range st.PIDs {
		if syscall.Kill(pid, 0) == nil {
			t.Fatalf("qemu process %d still alive after stop", pid)
		}
	}
}

// A guest that does not answer the power button (here: still in its
// firmware) is killed once the kill timeout passes.
func TestVMKilledWhenGuestIgnoresPowerdown(t *testing.T) {
	bin := qemutest.Binary(t)
	img := qemutest.Image(t)
	cfg := vmTask(t, img, map[string]any{"graceful_shutdown": true})
	d := New(Config{Binary: bin})
	if _, err := d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	waitFor(t, 10*time.Second, "the monitor socket", func() bool {
		_, err := os.Stat(filepath.Join(cfg.TaskDir, monitorSocket))
		return err == nil
	})
	start := time.Now()
	if err := d.StopTask(cfg.ID, 2*time.Second, ""); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	r := exitOf(t, d, cfg.ID, 5*time.Second)
	if r.Signal != int(syscall.SIGKILL) {
		t.Fatalf("exit %+v, want killed (the guest could not power down yet)", r)
	}
	if took < 2*time.Second || took > 10*time.Second {
		t.Fatalf("stop took %s, want the 2s kill timeout", took)
	}
}

// KVM: the image's firmware and boot loader run with accelerator "kvm",
// from a virtio disk.
// (On our CI machines, a nested PVM hypervisor, a stock Debian kernel does
// not get past its decompressor under KVM, so the full boot is the TCG
// test above.)
func TestVMStartsWithKVM(t *testing.T) {
	bin := qemutest.Binary(t)
	if err := qemutest.KVM(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but /dev/kvm is not usable: %v", err)
		}
		t.Skipf("/dev/kvm is not usable (%v)", err)
	}
	img := qemutest.Image(t)
	// The firmware boots the image from a virtio disk; the guest agent's
	// socket is there for a guest that runs one.
	cfg := vmTask(t, img, map[string]any{"accelerator": "kvm", "drive_interface": "virtio", "guest_agent": true})
	d := New(Config{Binary: bin})
	if _, err := d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	waitSerial(t, cfg, time.Minute, "SYSLINUX")
	st, err := d.InspectTask(cfg.ID)
	if err != nil || len(st.PIDs) == 0 {
		t.Fatalf("inspect: %+v %v", st, err)
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(st.PIDs[0]) + "/cmdline")
	if !strings.Contains(string(cmdline), "accel=kvm") || !strings.Contains(string(cmdline), "if=virtio") {
		t.Fatalf("qemu runs without KVM or the virtio disk: %q", cmdline)
	}
	if c, err := dialTaskSocket(cfg.TaskDir, guestAgentSocket, time.Second); err != nil {
		t.Fatalf("guest agent socket: %v", err)
	} else {
		c.Close()
	}
	// The signal stops qemu, not the kill timeout: a timeout far longer
	// than the bound (5 s against 6 s could not tell the two apart, and a
	// loaded machine could exceed it).
	start := time.Now()
	if err := d.StopTask(cfg.ID, 60*time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	exitOf(t, d, cfg.ID, 10*time.Second) // qemu ends with 0 on SIGTERM
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("stop took %s: SIGTERM did not stop qemu, the 60s kill timeout did", took)
	}
	if syscall.Kill(st.PIDs[0], 0) == nil {
		t.Fatalf("qemu process %d still alive after stop", st.PIDs[0])
	}
}
