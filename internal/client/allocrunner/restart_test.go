package allocrunner

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

// An in-place restart stops and starts only the named task, records
// Restart Signaled (with the request's index) and counts the restart, and
// does not use up the restart policy (0 attempts here: a counted restart
// would fail the task).
func TestAllocRunner_RestartTasksInPlace(t *testing.T) {
	d := mock.New()
	alloc := testutil.Alloc(structs.JobTypeService,
		testutil.MockTask("t", map[string]any{"run_for": "-1s"}),
		testutil.MockTask("side", map[string]any{"run_for": "-1s"}))
	ar, rec := newRunner(t, alloc, d)
	waitStatus(t, rec, structs.AllocClientStatusRunning)

	for idx := uint64(1); idx <= 3; idx++ {
		if !ar.TakeRestartIndex(idx) || ar.TakeRestartIndex(idx) {
			t.Fatalf("index %d not taken exactly once", idx)
		}
		if err := ar.RestartTasks([]string{"t"}, "rolling restart", idx); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 10*time.Second, func() error {
			st := ar.TaskState("t")
			if d.StartCount("t") != int(idx)+1 || st.State != structs.TaskStateRunning || st.Restarts != idx {
				return fmt.Errorf("starts %d, state %s, restarts %d", d.StartCount("t"), st.State, st.Restarts)
			}
			return nil
		})
		st := ar.TaskState("t")
		last := ""
		for _, e := range st.Events {
			if e.Type == structs.TaskRestartSignaled {
				last = e.Details[structs.TaskEventDetailRestartIndex]
			}
		}
		n := len(st.Events)
		if last != fmt.Sprint(idx) || st.Failed || st.Events[n-2].Type != structs.TaskRestarting || st.Events[n-1].Type != structs.TaskStarted {
			t.Fatalf("restart %d: last Restart Signaled %q, failed %v, events %v", idx, last, st.Failed, eventTypes(st))
		}
	}
	if d.StartCount("side") != 1 || ar.TaskState("side").Restarts != 0 {
		t.Fatal("the other task was restarted")
	}
	if err := ar.RestartTasks([]string{"nope"}, "", 4); err == nil {
		t.Fatal("restart of an unknown task succeeded")
	}
}

// A runner built for an allocation that already carries a request (the
// client picked it up after the request) does not act on that request.
func TestAllocRunner_RestartIndexSeenAtStart(t *testing.T) {
	alloc := testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	alloc.RestartRequest = &structs.AllocRestartRequest{Index: 5}
	ar, _ := newRunner(t, alloc, mock.New())
	if ar.TakeRestartIndex(5) || !ar.TakeRestartIndex(6) {
		t.Fatal("a request older than the runner was taken")
	}
}
