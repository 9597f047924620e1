package allocrunner

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

// waitTask polls the runner's updates until the named task's state passes
// ok, and returns that alloc.
func waitTask(t *testing.T, rec *recorder, task string, ok func(*structs.TaskState) error) *structs.Allocation {
	t.Helper()
	var got *structs.Allocation
	testutil.WaitFor(t, 10*time.Second, func() error {
		got = rec.last()
		if got == nil || got.TaskStates[task] == nil {
			return fmt.Errorf("no state for %s yet", task)
		}
		return ok(got.TaskStates[task])
	})
	return got
}

func isRunning(st *structs.TaskState) error {
	if st.State != structs.TaskStateRunning {
		return fmt.Errorf("state %s, want running", st.State)
	}
	return nil
}

func isDead(st *structs.TaskState) error {
	if st.State != structs.TaskStateDead {
		return fmt.Errorf("state %s, want dead", st.State)
	}
	return nil
}

// completedOnce fails unless the task ran exactly once and completed.
func completedOnce(t *testing.T, d *mock.Driver, name string, st *structs.TaskState) {
	t.Helper()
	if st.State != structs.TaskStateDead || st.Failed || st.Restarts != 0 || d.StartCount(name) != 1 {
		t.Fatalf("%s: state %s failed %v restarts %d starts %d, want dead once and not failed",
			name, st.State, st.Failed, st.Restarts, d.StartCount(name))
	}
}

// lifecycleAlloc builds an alloc whose restart policy would allow a
// restart, so a wrongly restarted task is visible.
func lifecycleAlloc(jobType string, tasks ...*structs.Task) *structs.Allocation {
	a := testutil.Alloc(jobType, tasks...)
	a.Job.TaskGroups[0].RestartPolicy.Attempts = 2
	return a
}

// Regression: in a service job an init-style prestart task that exits 0 ran
// again and again until the restart policy failed the allocation. It runs
// once, and the main task starts after it.
func TestAllocRunner_ServicePrestartRunsOnce(t *testing.T) {
	d := mock.New()
	pre := testutil.MockTask("init", map[string]any{"run_for": "10ms"})
	pre.Lifecycle = &structs.TaskLifecycle{Hook: "prestart"}
	main := testutil.MockTask("main", map[string]any{"run_for": "-1s"})
	_, rec := newRunner(t, lifecycleAlloc(structs.JobTypeService, pre, main), d)
	got := waitTask(t, rec, "main", isRunning)
	if got.ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("alloc %s, want running", got.ClientStatus)
	}
	completedOnce(t, d, "init", got.TaskStates["init"])
	if got.TaskStates["main"].StartedAt.Before(got.TaskStates["init"].FinishedAt) {
		t.Fatal("main task started before the prestart task finished")
	}
}

// A failing ephemeral prestart task is still retried by the restart policy.
func TestAllocRunner_ServicePrestartFailureRetried(t *testing.T) {
	d := mock.New()
	pre := testutil.MockTask("init", map[string]any{"run_for": "5ms", "exit_code": 1})
	pre.Lifecycle = &structs.TaskLifecycle{Hook: "prestart"}
	main := testutil.MockTask("main", map[string]any{"run_for": "-1s"})
	_, rec := newRunner(t, lifecycleAlloc(structs.JobTypeService, pre, main), d)
	got := waitStatus(t, rec, structs.AllocClientStatusFailed)
	if st := got.TaskStates["init"]; st.Restarts != 2 || !st.Failed || d.StartCount("init") != 3 {
		t.Fatalf("init restarts %d failed %v starts %d", st.Restarts, st.Failed, d.StartCount("init"))
	}
	if d.StartCount("main") != 0 {
		t.Fatal("main ran although its prestart task failed")
	}
}

// A poststart task without sidecar runs once after the main task started;
// the allocation keeps running.
func TestAllocRunner_ServicePoststartRunsOnce(t *testing.T) {
	d := mock.New()
	main := testutil.MockTask("main", map[string]any{"run_for": "-1s"})
	post := testutil.MockTask("post", map[string]any{"run_for": "10ms"})
	post.Lifecycle = &structs.TaskLifecycle{Hook: "poststart"}
	_, rec := newRunner(t, lifecycleAlloc(structs.JobTypeService, main, post), d)
	got := waitTask(t, rec, "post", isDead)
	completedOnce(t, d, "post", got.TaskStates["post"])
	if got.ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("alloc %s, want running", got.ClientStatus)
	}
	if got.TaskStates["post"].StartedAt.Before(got.TaskStates["main"].StartedAt) {
		t.Fatal("poststart task started before the main task")
	}
}

// Sidecars (prestart or poststart) are meant to keep running: an exit 0 is
// restarted, in service and batch jobs alike.
func TestAllocRunner_SidecarRestartedOnSuccess(t *testing.T) {
	for _, jt := range []string{structs.JobTypeService, structs.JobTypeBatch} {
		for _, hook := range []string{"prestart", "poststart"} {
			t.Run(jt+"/"+hook, func(t *testing.T) {
				d := mock.New()
				side := testutil.MockTask("side", map[string]any{"run_for": "5ms"})
				side.Lifecycle = &structs.TaskLifecycle{Hook: hook, Sidecar: true}
				main := testutil.MockTask("main", map[string]any{"run_for": "-1s"})
				_, rec := newRunner(t, lifecycleAlloc(jt, side, main), d)
				waitTask(t, rec, "side", func(st *structs.TaskState) error {
					if st.Restarts < 1 {
						return fmt.Errorf("restarts %d", st.Restarts)
					}
					return nil
				})
			})
		}
	}
}

// A poststop task runs once when the job is stopped, after the main task
// ended, and the allocation completes.
func TestAllocRunner_PoststopRunsOnceOnStop(t *testing.T) {
	d := mock.New()
	main := testutil.MockTask("main", map[string]any{"run_for": "-1s"})
	stop := testutil.MockTask("cleanup", map[string]any{"run_for": "10ms"})
	stop.Lifecycle = &structs.TaskLifecycle{Hook: "poststop"}
	alloc := lifecycleAlloc(structs.JobTypeService, main, stop)
	ar, rec := newRunner(t, alloc, d)
	waitTask(t, rec, "main", isRunning)
	if d.StartCount("cleanup") != 0 {
		t.Fatal("poststop task started while the main task runs")
	}
	up := *alloc
	up.DesiredStatus = structs.AllocDesiredStatusStop
	ar.Update(&up)
	got := waitStatus(t, rec, structs.AllocClientStatusComplete)
	completedOnce(t, d, "cleanup", got.TaskStates["cleanup"])
	if got.TaskStates["cleanup"].StartedAt.Before(got.TaskStates["main"].FinishedAt) {
		t.Fatal("poststop task started before the main task ended")
	}
}

// In a batch job the ephemeral tasks run once and the allocation completes.
func TestAllocRunner_BatchEphemeralTasksRunOnce(t *testing.T) {
	d := mock.New()
	pre := testutil.MockTask("pre", map[string]any{"run_for": "5ms"})
	pre.Lifecycle = &structs.TaskLifecycle{Hook: "prestart"}
	main := testutil.MockTask("main", map[string]any{"run_for": "30ms"})
	post := testutil.MockTask("post", map[string]any{"run_for": "5ms"})
	post.Lifecycle = &structs.TaskLifecycle{Hook: "poststart"}
	stop := testutil.MockTask("stop", map[string]any{"run_for": "5ms"})
	stop.Lifecycle = &structs.TaskLifecycle{Hook: "poststop"}
	_, rec := newRunner(t, lifecycleAlloc(structs.JobTypeBatch, pre, main, post, stop), d)
	got := waitStatus(t, rec, structs.AllocClientStatusComplete)
	for _, n := range []string{"pre", "main", "post", "stop"} {
		completedOnce(t, d, n, got.TaskStates[n])
	}
}

// killingAt returns when the task was told to stop (its Killing event).
func killingAt(t *testing.T, name string, st *structs.TaskState) time.Time {
	t.Helper()
	for _, e := range st.Events {
		if e.Type == structs.TaskKilling {
			return time.Unix(0, e.Time)
		}
	}
	t.Fatalf("%s was never killed: %v", name, eventTypes(st))
	return time.Time{}
}

// On stop the leader is killed first, then the other tasks, then the
// sidecars once those ended, so a sidecar outlives the tasks it serves.
func TestAllocRunner_StopKillsLeaderThenMainThenSidecars(t *testing.T) {
	d := mock.New()
	pre := testutil.MockTask("pre-side", map[string]any{"run_for": "-1s"})
	pre.Lifecycle = &structs.TaskLifecycle{Hook: "prestart", Sidecar: true}
	leader := testutil.MockTask("leader", map[string]any{"run_for": "-1s"})
	leader.Leader = true
	other := testutil.MockTask("other", map[string]any{"run_for": "-1s"})
	post := testutil.MockTask("post-side", map[string]any{"run_for": "-1s"})
	post.Lifecycle = &structs.TaskLifecycle{Hook: "poststart", Sidecar: true}
	alloc := lifecycleAlloc(structs.JobTypeService, pre, leader, other, post)
	ar, rec := newRunner(t, alloc, d)
	waitTask(t, rec, "post-side", isRunning)
	up := *alloc
	up.DesiredStatus = structs.AllocDesiredStatusStop
	ar.Update(&up)
	got := waitStatus(t, rec, structs.AllocClientStatusComplete)
	ts := got.TaskStates
	if k := killingAt(t, "other", ts["other"]); k.Before(ts["leader"].FinishedAt) {
		t.Fatalf("other killed at %v before the leader ended at %v", k, ts["leader"].FinishedAt)
	}
	for _, side := range []string{"pre-side", "post-side"} {
		k := killingAt(t, side, ts[side])
		for _, main := range []string{"leader", "other"} {
			if k.Before(ts[main].FinishedAt) {
				t.Fatalf("sidecar %s killed at %v before %s ended at %v", side, k, main, ts[main].FinishedAt)
			}
		}
	}
}

// When the leader (of a batch job) ends on its own the other tasks get a Leader Task Dead
// event and are stopped, sidecars after the main tasks.
func TestAllocRunner_LeaderDeadStopsOthers(t *testing.T) {
	d := mock.New()
	leader := testutil.MockTask("leader", map[string]any{"run_for": "50ms"})
	leader.Leader = true
	other := testutil.MockTask("other", map[string]any{"run_for": "-1s"})
	side := testutil.MockTask("side", map[string]any{"run_for": "-1s"})
	side.Lifecycle = &structs.TaskLifecycle{Hook: "prestart", Sidecar: true}
	_, rec := newRunner(t, lifecycleAlloc(structs.JobTypeBatch, side, leader, other), d)
	got := waitStatus(t, rec, structs.AllocClientStatusComplete)
	ts := got.TaskStates
	for _, n := range []string{"other", "side"} {
		found := false
		for _, e := range ts[n].Events {
			found = found || e.Type == structs.TaskLeaderDead
		}
		if !found || ts[n].Failed {
			t.Fatalf("%s: events %v failed %v, want a Leader Task Dead event and not failed", n, eventTypes(ts[n]), ts[n].Failed)
		}
	}
	if k := killingAt(t, "side", ts["side"]); k.Before(ts["other"].FinishedAt) {
		t.Fatalf("sidecar killed at %v before the main task ended at %v", k, ts["other"].FinishedAt)
	}
}

// A sidecar that fails for good fails the allocation, and the main task is
// stopped with a Sibling Task Failed event instead of running on in a
// failed allocation.
func TestAllocRunner_FailedSidecarStopsMain(t *testing.T) {
	for _, hook := range []string{"prestart", "poststart"} {
		t.Run(hook, func(t *testing.T) {
			d := mock.New()
			side := testutil.MockTask("side", map[string]any{"run_for": "20ms", "exit_code": 1})
			side.Lifecycle = &structs.TaskLifecycle{Hook: hook, Sidecar: true}
			main := testutil.MockTask("main", map[string]any{"run_for": "-1s"})
			_, rec := newRunner(t, testutil.Alloc(structs.JobTypeService, side, main), d)
			got := waitTask(t, rec, "main", isDead)
			if got.ClientStatus != structs.AllocClientStatusFailed || !got.TaskStates["side"].Failed {
				t.Fatalf("alloc %s, side failed %v", got.ClientStatus, got.TaskStates["side"].Failed)
			}
			found := false
			for _, e := range got.TaskStates["main"].Events {
				found = found || (e.Type == structs.TaskSiblingFailed && e.FailedSibling == "side")
			}
			if !found {
				t.Fatalf("main events %v, want Sibling Task Failed naming side", eventTypes(got.TaskStates["main"]))
			}
		})
	}
}
