package rawexec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/cgrouptest"
)

// cgroupTrackers are the cgroup trackers this machine can test (the
// process-group fallback has no cgroup to clean up).
func cgroupTrackers(t *testing.T) map[string]Config {
	t.Helper()
	requireRoot(t, "task cgroups")
	cases := trackerCases(t)
	delete(cases, "pgroup")
	if len(cases) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but no cgroup tracker is usable")
		}
		t.Skip("no usable cgroup tracker")
	}
	return cases
}

// procGone reports a process that no longer runs (gone, or a zombie).
func procGone(pid int) bool {
	st, err := readProcStat(pid)
	return err != nil || st.state == 'Z' || st.state == 'X'
}

// makesChildCgroups is a task that makes a cgroup named "child" under each
// of its own cgroups (found in /proc/self/cgroup), moves a sleeping
// process into the first one it can and freezes that cgroup, writes what
// it made to ./made and the sleeper's PID to ./sleeper, and exits.
const makesChildCgroups = `set -e
while IFS=: read -r n ctrl path; do
  case "$path" in */"$TASK_CGROUP") ;; *) continue ;; esac
  case "$ctrl" in
    "") dir="$V2_ROOT$path" ;;
    name=*) continue ;;
    *) dir="/sys/fs/cgroup/$ctrl$path" ;;
  esac
  mkdir "$dir/child"
  echo "$dir/child" >> made
  if [ "$ctrl" != cpuset ] && [ ! -e sleeper ]; then
    sleep 600 </dev/null >/dev/null 2>&1 &
    echo $! > "$dir/child/cgroup.procs"
    echo $! > sleeper
    # Frozen on its own: thawing the task's cgroup does not thaw it.
    case "$ctrl" in
      "") echo 1 > "$dir/child/cgroup.freeze" ;;
      freezer) echo FROZEN > "$dir/child/freezer.state" ;;
    esac
  fi
done < /proc/self/cgroup
`

// A task running as root that made cgroups of its own under its cgroups
// is cleaned up whole: its processes in them killed (thawed first when
// their cgroup froze itself), the cgroups removed deepest first. Its destroy failed before (rmdir of its cgroups: EBUSY),
// which kept the task registered, and every later start of its ID failed
// as "already started".
func TestDestroyRemovesCgroupsTheTaskMade(t *testing.T) {
	for name, cfg := range cgroupTrackers(t) {
		t.Run(name, func(t *testing.T) {
			d := New(cfg)
			id := fmt.Sprintf("%d-childcg-%s", time.Now().UnixNano(), name)
			v2root := "/sys/fs/cgroup/unified"
			if trk := d.tracker(); trk.kind == cgV2 {
				v2root = trk.root
			}
			tc := newTask(t, id, map[string]any{"command": "/bin/sh", "args": []any{"-c", makesChildCgroups}},
				map[string]string{"PATH": "/usr/bin:/bin", "V2_ROOT": v2root})
			tc.Env["TASK_CGROUP"] = cgroupName(tc.ID)
			var made []string
			sleeper := 0
			t.Cleanup(func() {
				for _, m := range made { // a failed run leaves the sleeper frozen
					_ = os.WriteFile(filepath.Join(m, "freezer.state"), []byte("THAWED"), 0)
					_ = os.WriteFile(filepath.Join(m, "cgroup.freeze"), []byte("0"), 0)
				}
				if sleeper > 0 && !procGone(sleeper) {
					_ = syscall.Kill(sleeper, syscall.SIGKILL)
					for end := time.Now().Add(5 * time.Second); !procGone(sleeper) && time.Now().Before(end); {
						time.Sleep(10 * time.Millisecond)
					}
				}
				for _, m := range made {
					_ = os.Remove(m)
					_ = os.Remove(filepath.Dir(m))
				}
			})
			if _, err := d.StartTask(tc); err != nil {
				t.Fatal(err)
			}
			cg := d.tasks[tc.ID].cg
			dirs := []string{cg.Path}
			if cg.Cpuset != nil && cg.Cpuset.V1 {
				dirs = append(dirs, cg.Cpuset.Path)
			}
			if r := waitExit(t, d, tc.ID); r.ExitCode != 0 {
				b, _ := os.ReadFile(tc.StderrPath)
				t.Fatalf("task failed (exit %d): %s", r.ExitCode, b)
			}
			b, err := os.ReadFile(filepath.Join(tc.TaskDir, "made"))
			if err != nil {
				t.Fatalf("the task made no child cgroup: %v", err)
			}
			made = strings.Fields(string(b))
			if len(made) < len(dirs) {
				t.Fatalf("the task made child cgroups %v; want one under each of %v", made, dirs)
			}
			b, err = os.ReadFile(filepath.Join(tc.TaskDir, "sleeper"))
			if err != nil {
				t.Fatal(err)
			}
			if sleeper, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
				t.Fatal(err)
			}
			if procGone(sleeper) {
				t.Fatalf("the task's sleeper %d is not running before the destroy", sleeper)
			}

			if err := d.DestroyTask(tc.ID, false); err != nil {
				t.Fatalf("destroy: %v", err)
			}
			waitFor(t, 5*time.Second, "the process in the task's child cgroup to be killed", func() bool { return procGone(sleeper) })
			for _, p := range append(dirs, made...) {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("cgroup %s is left after the destroy (stat: %v)", p, err)
				}
			}

			// The task starts again under the same ID (its restart).
			tc.Config = map[string]any{"command": "/bin/sleep", "args": []any{"600"}}
			if _, err := d.StartTask(tc); err != nil {
				t.Fatalf("start after the destroy: %v", err)
			}
			if err := d.StopTask(tc.ID, time.Second, ""); err != nil {
				t.Fatal(err)
			}
			if err := d.DestroyTask(tc.ID, false); err != nil {
				t.Fatal(err)
			}
			for _, p := range dirs {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("cgroup %s is left after the second destroy (stat: %v)", p, err)
				}
			}
		})
	}
}

// A destroy whose cleanup fails (here: a child cgroup that cannot be
// removed while something is mounted on it) forgets the task all the
// same: the next start of its ID works, and the cleanup is retried on the
// driver's fingerprint until it succeeds.
func TestDestroyForgetsATaskWhoseCleanupFailed(t *testing.T) {
	old := cleanupTimeout
	cleanupTimeout = 300 * time.Millisecond
	t.Cleanup(func() { cleanupTimeout = old })
	for name, cfg := range cgroupTrackers(t) {
		t.Run(name, func(t *testing.T) {
			d := New(cfg)
			id := fmt.Sprintf("%d-failcleanup-%s", time.Now().UnixNano(), name)
			tc := newTask(t, id, map[string]any{"command": "/bin/sleep", "args": []any{"600"}}, nil)
			if _, err := d.StartTask(tc); err != nil {
				t.Fatal(err)
			}
			cgPath := d.tasks[tc.ID].cg.Path
			_, unmount := cgrouptest.BusyChild(t, cgPath)

			err := d.DestroyTask(tc.ID, true)
			if !errors.Is(err, ErrCleanupIncomplete) {
				t.Fatalf("destroy with an unremovable cgroup: got %v, want ErrCleanupIncomplete", err)
			}
			if _, err := d.InspectTask(tc.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
				t.Fatalf("destroyed task still known: %v", err)
			}
			h, err := d.StartTask(tc)
			if err != nil {
				t.Fatalf("start after a destroy whose cleanup failed: %v", err)
			}
			var ds driverState
			if err := jsonUnmarshal(h.DriverState, &ds); err != nil {
				t.Fatal(err)
			}
			// The stop kills the task; its cleanup fails again.
			_ = d.StopTask(tc.ID, time.Second, "")
			if err := d.DestroyTask(tc.ID, true); !errors.Is(err, ErrCleanupIncomplete) {
				t.Fatalf("second destroy: got %v, want ErrCleanupIncomplete (the mount is still there)", err)
			}
			if !procGone(ds.PID) {
				t.Fatalf("task process %d survived its destroy", ds.PID)
			}

			unmount()
			waitFor(t, 20*time.Second, "the fingerprint to finish the failed cleanup", func() bool {
				d.Fingerprint()
				_, err := os.Stat(cgPath)
				return errors.Is(err, os.ErrNotExist) && d.leftovers.Len() == 0
			})
			if !procGone(ds.ShimPID) {
				t.Errorf("task supervisor %d still runs", ds.ShimPID)
			}
		})
	}
}
