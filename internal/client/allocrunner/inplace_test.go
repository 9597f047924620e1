package allocrunner

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

// An in-place update of the restart block reaches the running task: the
// next exit is judged by the new policy, without restarting the task for
// the update itself.
func TestAllocRunner_InPlaceUpdateTakesNewRestartPolicy(t *testing.T) {
	d := mock.New()
	// The task fails when the test says so: with a fixed run_for, a
	// loaded machine let it fail under the old policy before the update.
	alloc := testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	alloc.Job.TaskGroups[0].RestartPolicy.Attempts = 0
	alloc.AllocModifyIndex = 10
	ar, rec := newRunner(t, alloc, d)
	waitStatus(t, rec, structs.AllocClientStatusRunning)

	up := *alloc
	up.Job = alloc.Job.Copy()
	up.Job.Version++
	up.Job.TaskGroups[0].RestartPolicy.Attempts = 1
	up.AllocModifyIndex = 20
	ar.Update(&up)
	if n := d.StartCount("t"); n != 1 {
		t.Fatalf("the update started the task again (%d starts)", n)
	}
	// The task dies on its own (not a stop the client asked for), is
	// restarted once under the new policy, and dies again.
	fail := func() {
		t.Helper()
		if err := d.SignalTask(alloc.ID+"/t", "SIGTERM"); err != nil {
			t.Fatal(err)
		}
	}
	fail()
	testutil.WaitFor(t, 10*time.Second, func() error {
		if st := ar.TaskState("t"); d.StartCount("t") != 2 || st.State != structs.TaskStateRunning {
			return fmt.Errorf("starts %d, state %s: not yet restarted", d.StartCount("t"), st.State)
		}
		return nil
	})
	fail()

	got := waitStatus(t, rec, structs.AllocClientStatusFailed)
	st := got.TaskStates["t"]
	if st.Restarts != 1 || d.StartCount("t") != 2 {
		t.Fatalf("restarts %d, starts %d: want the new policy's single restart (events %v)", st.Restarts, d.StartCount("t"), eventTypes(st))
	}
	want := []string{structs.TaskReceived, structs.TaskSetup, structs.TaskStarted, structs.TaskTerminated,
		structs.TaskRestarting, structs.TaskStarted, structs.TaskTerminated, structs.TaskNotRestarting}
	if fmt.Sprint(eventTypes(st)) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", eventTypes(st), want)
	}
}

// An allocation outside any deployment never carries health, whatever its
// group's update block says.
func TestHealth_NoDeploymentSetsNothing(t *testing.T) {
	d := mock.New()
	alloc := deployedAlloc(10*time.Millisecond, time.Minute, testutil.MockTask("t", map[string]any{"run_for": "100ms", "exit_code": 1}))
	alloc.DeploymentID = ""
	_, rec := newRunner(t, alloc, d)
	waitStatus(t, rec, structs.AllocClientStatusFailed)
	if u := rec.anyHealth(); u != nil {
		t.Fatalf("no deployment but the client sent %+v", u.DeploymentStatus)
	}
}

// kill_timeout and kill_signal change in place: a stop after the update
// uses the new values.
func TestAllocRunner_InPlaceUpdateTakesNewKillTimeout(t *testing.T) {
	d := mock.New()
	alloc := testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	ar, rec := newRunner(t, alloc, d)
	waitStatus(t, rec, structs.AllocClientStatusRunning)

	up := *alloc
	up.Job = alloc.Job.Copy()
	up.Job.Version++
	up.Job.TaskGroups[0].Tasks[0].KillTimeout = 1500 * time.Millisecond
	ar.Update(&up)
	stop := up
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	ar.Update(&stop)
	got := waitStatus(t, rec, structs.AllocClientStatusComplete)
	for _, e := range got.TaskStates["t"].Events {
		if e.Type == structs.TaskKilling {
			if e.KillTimeout != 1500*time.Millisecond {
				t.Fatalf("killed with kill_timeout %s, want the updated 1.5s", e.KillTimeout)
			}
			if d.StartCount("t") != 1 {
				t.Fatalf("task started %d times", d.StartCount("t"))
			}
			return
		}
	}
	t.Fatalf("no Killing event: %v", eventTypes(got.TaskStates["t"]))
}
