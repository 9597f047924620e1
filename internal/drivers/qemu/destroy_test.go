package qemu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/cgrouptest"
	"github.com/drover-project/drover/internal/drivers/rawexec"
)

// A VM whose cleanup fails at its destroy (here: a child cgroup under the
// VM's cgroup that cannot be removed while something is mounted on it) is
// forgotten all the same, and starts again under the same ID. It stayed
// registered before, and every start of the task failed as "already
// started" until its restart policy gave up.
func TestDestroyWithFailedCleanupDoesNotWedgeTheVM(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but not running as root: cannot test the VM's cgroup cleanup")
		}
		t.Skip("needs root to test the VM's cgroup cleanup")
	}
	const freezer = "/sys/fs/cgroup/freezer"
	if _, err := os.Stat(filepath.Join(freezer, "cgroup.procs")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but there is no cgroup v1 freezer: %v", err)
		}
		t.Skipf("no cgroup v1 freezer: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "qemu-system-x86_64")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'QEMU emulator version 7.2.22'; exit 0; fi\nexec sleep 600\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	alloc := t.TempDir()
	task := filepath.Join(alloc, "vm")
	if err := os.MkdirAll(task, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(task, "disk.img"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := fmt.Sprintf("%d-qemudestroy", time.Now().UnixNano())
	cfg := &drivers.TaskConfig{ID: run + "/vm", AllocID: run, Name: "vm", AllocDir: alloc, TaskDir: task,
		Env: map[string]string{"PATH": "/usr/bin:/bin"}, Config: map[string]any{"image_path": "disk.img"}}
	d := New(Config{Binary: bin, CgroupRoot: freezer})
	if _, err := d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	cg := filepath.Join(freezer, "drover", strings.ReplaceAll(cfg.ID, "/", "."))
	st0, err := d.InspectTask(cfg.ID)
	if err != nil || len(st0.PIDs) == 0 {
		t.Fatalf("inspect: %+v %v", st0, err)
	}
	if b, err := os.ReadFile(filepath.Join(cg, "cgroup.procs")); err != nil || !strings.Contains(string(b), fmt.Sprint(st0.PIDs[0])) {
		t.Fatalf("the VM's process %d is not in %s (%q, %v)", st0.PIDs[0], cg, b, err)
	}
	_, unmount := cgrouptest.BusyChild(t, cg)

	// The monitor's socket, as a running qemu leaves it.
	sock := filepath.Join(task, monitorSocket)
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.DestroyTask(cfg.ID, true); !errors.Is(err, rawexec.ErrCleanupIncomplete) {
		t.Fatalf("destroy with an unremovable cgroup: got %v, want rawexec.ErrCleanupIncomplete", err)
	}
	if _, err := d.InspectTask(cfg.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Fatalf("destroyed VM still known: %v", err)
	}
	if _, err := d.get(cfg.ID); err == nil {
		t.Fatal("the driver still keeps the destroyed VM")
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the destroyed VM's monitor socket is left: %v", err)
	}
	unmount()
	if _, err := d.StartTask(cfg); err != nil {
		t.Fatalf("start after a destroy whose cleanup failed: %v", err)
	}
	if err := d.StopTask(cfg.ID, time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	if err := d.DestroyTask(cfg.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cg); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the VM's cgroup is left behind: %v", err)
	}
}
