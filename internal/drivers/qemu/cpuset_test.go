package qemu

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

func cpusAllowed(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// The emulator runs in its supervisor's cpuset cgroup: a VM with reserved
// cores is pinned to them, one without follows the node's shared cpuset
// while it runs. (A stand-in emulator: the cgroup is what is tested.)
func TestVMCpuset(t *testing.T) {
	if os.Geteuid() != 0 || runtime.NumCPU() < 2 {
		if os.Getenv("CI") != "" && os.Geteuid() != 0 {
			t.Fatal("CI is set but not running as root: cannot test cpusets")
		}
		t.Skip("needs root and 2 CPUs")
	}
	bin := filepath.Join(t.TempDir(), "qemu-system-x86_64")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'QEMU emulator version 7.2.22'; exit 0; fi\nexec sleep 300\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := New(Config{Binary: bin})
	start := func(name string, cores []uint16, shared string) (pid int, id string) {
		alloc := t.TempDir()
		task := filepath.Join(alloc, name)
		logs := filepath.Join(alloc, "alloc", "logs")
		for _, dir := range []string{task, logs} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(task, "disk.img"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		allocID := uniqueID("a-" + name)
		cfg := &drivers.TaskConfig{ID: allocID + "/" + name, AllocID: allocID, Name: name, AllocDir: alloc, TaskDir: task,
			Env: map[string]string{"PATH": "/usr/bin:/bin"}, Logs: &drivers.LogConfig{Dir: logs, MaxFiles: 2, MaxFileSizeMB: 1},
			Config:       map[string]any{"image_path": "disk.img"},
			Resources:    &structs.AllocatedTaskResources{Cpu: structs.AllocatedCpuResources{ReservedCores: cores}},
			SharedCpuset: shared}
		if _, err := d.StartTask(cfg); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
		st, err := d.InspectTask(cfg.ID)
		if err != nil || len(st.PIDs) == 0 {
			t.Fatalf("inspect %+v %v", st, err)
		}
		return st.PIDs[0], cfg.ID
	}
	on := func(what string, pid int, want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for cpusAllowed(pid) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s runs on %q, want %s", what, cpusAllowed(pid), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	pinned, pinnedID := start("pinned", []uint16{1}, "0")
	on("the VM with reserved core 1", pinned, "1")
	shared, sharedID := start("shared", nil, "0-1")
	on("the VM without cores", shared, "0-1")
	if err := d.UpdateCpuset(sharedID, "0"); err != nil {
		t.Fatal(err)
	}
	on("the VM without cores", shared, "0")
	if err := d.UpdateCpuset(pinnedID, "0"); err != nil {
		t.Fatal(err)
	}
	on("the VM with reserved core 1", pinned, "1")
}
