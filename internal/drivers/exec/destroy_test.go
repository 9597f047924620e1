package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/cgrouptest"
	"github.com/drover-project/drover/internal/drivers/rawexec"
)

// taskPIDsGone reports that none of pids runs any more.
func taskPIDsGone(pids []int) bool {
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if f := strings.Fields(string(b)); err == nil && len(f) > 2 && f[2] != "Z" && f[2] != "X" {
			return false
		}
	}
	return true
}

// A restarted agent whose exec plugin configuration changed meanwhile
// (the task's user now denied, a lower pids_limit) re-attaches to the task
// all the same, with the isolation it runs with, and can stop it. It
// refused before, leaving the task running untracked beside the copy the
// client then started.
func TestExecRecoverIgnoresTodaysPluginConfig(t *testing.T) {
	requireIsolation(t)
	deniesNobody := DefaultPluginConfig()
	deniesNobody.DeniedUIDs = IDSet{{65534, 65534}}
	lowerPids := DefaultPluginConfig()
	lowerPids.PidsLimit = 10
	narrowCaps := DefaultPluginConfig()
	narrowCaps.AllowCaps = []string{"kill"}
	for name, plugin := range map[string]PluginConfig{"denied_host_uids": deniesNobody, "pids_limit": lowerPids, "allow_caps": narrowCaps} {
		t.Run(name, func(t *testing.T) {
			id := fmt.Sprintf("%d-recpolicy-%s", time.Now().UnixNano(), strings.ReplaceAll(name, "_", ""))
			tc := newTask(t, id, map[string]any{"command": "sleep", "args": []any{"600"}, "pids_limit": 100, "cap_add": []any{"chown"}})
			a := New(Config{})
			h, err := a.StartTask(tc)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = a.DestroyTask(tc.ID, true) })
			st0, err := a.InspectTask(tc.ID)
			if err != nil || len(st0.PIDs) == 0 {
				t.Fatalf("inspect: %+v %v", st0, err)
			}
			// The new configuration refuses the task as a new start.
			b := New(Config{Plugin: plugin})
			if _, err := b.StartTask(newTask(t, id+"x", tc.Config)); err == nil {
				t.Fatalf("the changed plugin config (%s) accepts the task as a new start: the test proves nothing", name)
			}

			if err := b.RecoverTask(h); err != nil {
				running := !taskPIDsGone(st0.PIDs)
				t.Fatalf("recover under a changed plugin config: %v (task processes %v still running: %v)", err, st0.PIDs, running)
			}
			st, err := b.InspectTask(tc.ID)
			if err != nil || st.State != drivers.TaskStateRunning || len(st.PIDs) == 0 || st.PIDs[0] != st0.PIDs[0] {
				t.Fatalf("recovered task: %+v %v (was %v)", st, err, st0.PIDs)
			}
			// alloc exec enters it as the user it runs as.
			var out strings.Builder
			code, err := b.ExecTask(context.Background(), tc.ID, drivers.ExecOptions{Command: []string{"/bin/sh", "-c", "id -u"}, Stdout: &out})
			if err != nil || code != 0 || out.String() != "65534\n" {
				t.Errorf("exec into the recovered task: %d %v %q", code, err, out.String())
			}
			if err := b.StopTask(tc.ID, time.Second, "SIGTERM"); err != nil {
				t.Fatal(err)
			}
			if err := b.DestroyTask(tc.ID, true); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 5*time.Second, "the task's processes to end", func() bool { return taskPIDsGone(st0.PIDs) })
			if _, err := os.Stat(b.tasksCgroupDir(t, tc)); !os.IsNotExist(err) {
				t.Errorf("task cgroup left behind: %v", err)
			}
		})
	}
}

// A task that cannot be recovered (its supervisor and process are gone
// without an exit record) has its container removed by the failed
// recovery, whatever the plugin configuration says today.
func TestExecFailedRecoverRemovesTheContainer(t *testing.T) {
	requireIsolation(t)
	id := fmt.Sprintf("%d-recgone", time.Now().UnixNano())
	tc := newTask(t, id, map[string]any{"command": "sleep", "args": []any{"600"}})
	a := New(Config{})
	h, err := a.StartTask(tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.DestroyTask(tc.ID, true) })
	// The supervisor and the task die without recording an exit (a host
	// crash as the new agent sees it): the container's cgroups stay.
	ds := struct {
		PID     int `json:"pid"`
		ShimPID int `json:"shim_pid"`
	}{}
	if err := json.Unmarshal(h.DriverState, &ds); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(ds.ShimPID, syscall.SIGKILL)
	_ = syscall.Kill(ds.PID, syscall.SIGKILL)
	waitFor(t, 5*time.Second, "the task and its supervisor to die", func() bool { return taskPIDsGone([]int{ds.PID, ds.ShimPID}) })
	_ = os.Remove(filepath.Join(tc.TaskDir, "private", "rawexec", "exit.json"))
	if _, err := os.Stat(a.tasksCgroupDir(t, tc)); err != nil {
		t.Fatalf("the dead task's cgroup is not there to be cleaned up: %v", err)
	}

	denies := DefaultPluginConfig()
	denies.DeniedUIDs = IDSet{{65534, 65534}}
	b := New(Config{Plugin: denies})
	if err := b.RecoverTask(h); err == nil {
		t.Fatal("recovered a task whose process and supervisor are gone")
	}
	if _, err := os.Stat(b.tasksCgroupDir(t, tc)); !os.IsNotExist(err) {
		t.Errorf("the unrecoverable task's cgroup is left behind: %v", err)
	}
}

// A destroy whose container cannot be removed (here a child cgroup kept
// busy by a mount) forgets the task all the same: it is retried on the
// fingerprint, and the task's ID can be started again once it succeeds.
// The entry stayed before, and every start of the ID failed as "already
// started".
func TestExecDestroyForgetsATaskWhoseContainerStayed(t *testing.T) {
	requireIsolation(t)
	id := fmt.Sprintf("%d-destroystuck", time.Now().UnixNano())
	tc := newTask(t, id, map[string]any{"command": "sleep", "args": []any{"600"}})
	d := New(Config{})
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	memDir := d.tasksCgroupDir(t, tc)
	_, unmount := cgrouptest.BusyChild(t, memDir)
	t.Cleanup(func() {
		unmount()
		_ = d.DestroyTask(tc.ID, true)
	})
	st0, err := d.InspectTask(tc.ID)
	if err != nil {
		t.Fatal(err)
	}

	err = d.DestroyTask(tc.ID, true)
	if !errors.Is(err, rawexec.ErrCleanupIncomplete) {
		t.Fatalf("destroy with an unremovable cgroup: got %v, want ErrCleanupIncomplete", err)
	}
	if _, err := d.InspectTask(tc.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Fatalf("destroyed task still known: %v", err)
	}
	if !taskPIDsGone(st0.PIDs) {
		t.Fatalf("task processes %v survived the destroy", st0.PIDs)
	}
	if _, err := d.StartTask(tc); err != nil && strings.Contains(err.Error(), "already started") {
		t.Fatalf("start after the destroy: %v", err)
	} else if err == nil {
		if err := d.DestroyTask(tc.ID, true); !errors.Is(err, rawexec.ErrCleanupIncomplete) {
			t.Fatalf("destroy of the restarted task: got %v, want ErrCleanupIncomplete (the mount is still there)", err)
		}
	}

	unmount()
	waitFor(t, 20*time.Second, "the fingerprint to finish the failed cleanup", func() bool {
		d.Fingerprint()
		_, err := os.Stat(memDir)
		return os.IsNotExist(err) && d.leftovers.Len() == 0
	})
	if _, err := d.StartTask(tc); err != nil {
		t.Fatalf("start once the cleanup finished: %v", err)
	}
	if err := d.DestroyTask(tc.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(memDir); !os.IsNotExist(err) {
		t.Errorf("task cgroup left behind: %v", err)
	}
}
