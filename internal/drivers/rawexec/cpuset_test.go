package rawexec

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/cpuset"
	"github.com/drover-project/drover/internal/structs"
)

// cpusAllowed is the kernel's Cpus_allowed_list of a process.
func cpusAllowed(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "gone: " + err.Error()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestSharedCpusetFollowsReservedCores: a running task without cores
// (and the child it forked) is confined to the node's shared cpuset; when
// a task reserving core 1 starts on the node, it is moved off core 1 while
// it runs, and back onto every core when that task stops. Designed for a
// node with 2 CPUs (the CI machines): reserve 1, the other task keeps 0.
func TestSharedCpusetFollowsReservedCores(t *testing.T) {
	requireRoot(t, "cpuset cgroups")
	if runtime.NumCPU() < 2 {
		t.Skipf("needs 2 CPUs, the machine has %d", runtime.NumCPU())
	}
	if fsMagic(cpusetMount) != cgroup1Magic && !v2HasCpuset("/sys/fs/cgroup") {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but the host has no cpuset cgroup controller")
		}
		t.Skip("no cpuset cgroup controller on this host")
	}
	for name, cfg := range trackerCases(t) {
		if name == "pgroup" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			d := New(cfg)
			m := cpuset.NewManager(cpuset.New(0, 1), nil)

			shared := newTask(t, "shared-"+name, map[string]any{"command": "/bin/sh", "args": []any{"-c", "sleep 300 & exec sleep 301"}}, nil)
			shared.SharedCpuset = m.Shared().String()
			if _, err := d.StartTask(shared); err != nil {
				t.Fatal(err)
			}
			defer d.DestroyTask(shared.ID, true)
			untrack := m.Track(shared.ID, m.Shared(), func(s cpuset.Set) error { return d.UpdateCpuset(shared.ID, s.String()) })
			defer untrack()

			// Every process of the task, its forked child included, runs on want.
			onCPUs := func(id, want string) func() bool {
				return func() bool {
					st, err := d.InspectTask(id)
					if err != nil || len(st.PIDs) < 2 {
						return false
					}
					for _, pid := range st.PIDs {
						if cpusAllowed(pid) != want {
							return false
						}
					}
					got, _ := d.TaskCpus(id)
					return got == want
				}
			}
			waitFor(t, 10*time.Second, "the shared task on CPUs 0-1", onCPUs(shared.ID, "0-1"))

			// A task reserving core 1 arrives: its allocation holds the core
			// before it starts, and the running task leaves it.
			m.AddAlloc("alloc-cores", cpuset.New(1))
			cores := newTask(t, "cores-"+name, map[string]any{"command": "/bin/sh", "args": []any{"-c", "sleep 300 & exec sleep 301"}}, nil)
			cores.Resources = &structs.AllocatedTaskResources{Cpu: structs.AllocatedCpuResources{ReservedCores: []uint16{1}}}
			cores.SharedCpuset = m.Shared().String()
			if _, err := d.StartTask(cores); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, "the shared task off the reserved core", onCPUs(shared.ID, "0"))
			waitFor(t, 10*time.Second, "the cores task on its core", onCPUs(cores.ID, "1"))
			// The client never moves a task with reserved cores; asked to,
			// the driver keeps it on them.
			if err := d.UpdateCpuset(cores.ID, "0-1"); err != nil {
				t.Fatal(err)
			}
			if got, _ := d.TaskCpus(cores.ID); got != "1" {
				t.Fatalf("cores task moved onto %q", got)
			}

			// It stops: the core comes back to the shared task.
			if err := d.StopTask(cores.ID, time.Second, "SIGKILL"); err != nil {
				t.Fatal(err)
			}
			if err := d.DestroyTask(cores.ID, true); err != nil {
				t.Fatal(err)
			}
			m.RemoveAlloc("alloc-cores")
			waitFor(t, 10*time.Second, "the shared task back on CPUs 0-1", onCPUs(shared.ID, "0-1"))

			// Its cpuset cgroup goes with the task.
			h, _ := d.get(shared.ID)
			dir := h.cg.Cpuset.Path
			if err := d.DestroyTask(shared.ID, true); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Fatalf("task cpuset cgroup %s left behind: %v", dir, err)
			}
		})
	}
}

// A task recovered from an agent that ran it without a cpuset cgroup (an
// earlier version) gets one, with its processes moved in, and then follows
// the shared set.
func TestRecoveredTaskWithoutCpusetIsAdopted(t *testing.T) {
	requireRoot(t, "cpuset cgroups")
	if runtime.NumCPU() < 2 || fsMagic(cpusetMount) != cgroup1Magic {
		t.Skip("needs 2 CPUs and the cgroup v1 cpuset hierarchy")
	}
	d := New(Config{Enabled: true})
	cfg := newTask(t, "adopt", map[string]any{"command": "/bin/sh", "args": []any{"-c", "sleep 300 & exec sleep 301"}}, nil)
	cfg.SharedCpuset = "0-1"
	th, err := d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyTask(cfg.ID, true)
	// Make it what an earlier agent left: processes in the root cpuset,
	// no cpuset cgroup in the handle.
	h, _ := d.get(cfg.ID)
	dir := h.cg.Cpuset.Path
	st, _ := d.InspectTask(cfg.ID)
	for _, pid := range st.PIDs {
		if err := os.WriteFile(cpusetMount+"/cgroup.procs", []byte(fmt.Sprint(pid)), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	var ds driverState
	if err := jsonUnmarshal(th.DriverState, &ds); err != nil {
		t.Fatal(err)
	}
	ds.Cgroup.Cpuset = nil
	th.DriverState, _ = jsonMarshal(ds)

	d2 := New(Config{Enabled: true})
	if err := d2.RecoverTask(th); err != nil {
		t.Fatal(err)
	}
	defer d2.DestroyTask(cfg.ID, true)
	if err := d2.UpdateCpuset(cfg.ID, "0"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "every process of the adopted task on CPU 0", func() bool {
		for _, pid := range st.PIDs {
			if cpusAllowed(pid) != "0" {
				return false
			}
		}
		return true
	})
}
