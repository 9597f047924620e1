package allocrunner

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

// A batch allocation that runs past its group's max_run_duration is
// stopped: its task is killed (the Killing event names the reason), its
// poststop task does not run, and it ends complete with Nomad's
// description, not failed.
func TestAllocRunner_MaxRunDurationStopsBatchAlloc(t *testing.T) {
	d := mock.New()
	main := testutil.MockTask("main", map[string]any{"run_for": "-1s"})
	post := testutil.MockTask("cleanup", map[string]any{"run_for": "10ms"})
	post.Lifecycle = &structs.TaskLifecycle{Hook: "poststop"}
	a := testutil.Alloc(structs.JobTypeBatch, main, post)
	limit := 300 * time.Millisecond
	a.Job.TaskGroups[0].MaxRunDuration = &limit
	created := time.Now()
	_, rec := newRunner(t, a, d)
	got := waitStatus(t, rec, structs.AllocClientStatusComplete)
	if got.ClientDescription != MaxRunExceededDesc {
		t.Fatalf("client description %q, want %q", got.ClientDescription, MaxRunExceededDesc)
	}
	st := got.TaskStates["main"]
	if st.Failed {
		t.Fatal("the timed-out task is marked failed")
	}
	var reason string
	for _, e := range st.Events {
		if e.Type == structs.TaskKilling {
			reason = e.KillReason
		}
	}
	if reason != MaxRunExceededDesc {
		t.Fatalf("Killing event reason %q (events %v), want %q", reason, eventTypes(st), MaxRunExceededDesc)
	}
	if n := d.StartCount("cleanup"); n != 0 {
		t.Fatalf("the poststop task ran %d times after the allocation ran out of time", n)
	}
	// The time counts from when the runner started, as in Nomad.
	if ran := st.FinishedAt.Sub(created); ran < limit {
		t.Fatalf("the allocation was stopped after %s, before its max_run_duration %s", ran, limit)
	}
}

// A batch allocation that finishes in time is untouched, and a service
// allocation (max_run_duration is for batch and sysbatch jobs) never
// times out.
func TestAllocRunner_MaxRunDurationOnlyWhenExceeded(t *testing.T) {
	d := mock.New()
	a := testutil.Alloc(structs.JobTypeBatch, testutil.MockTask("main", map[string]any{"run_for": "20ms"}))
	limit := time.Minute
	a.Job.TaskGroups[0].MaxRunDuration = &limit
	_, rec := newRunner(t, a, d)
	got := waitStatus(t, rec, structs.AllocClientStatusComplete)
	if got.ClientDescription == MaxRunExceededDesc {
		t.Fatalf("an allocation that finished in time is described as %q", got.ClientDescription)
	}

	svc := testutil.Alloc(structs.JobTypeService, testutil.MockTask("web", map[string]any{"run_for": "-1s"}))
	short := 50 * time.Millisecond
	svc.Job.TaskGroups[0].MaxRunDuration = &short
	ar, rec2 := newRunner(t, svc, d)
	waitStatus(t, rec2, structs.AllocClientStatusRunning)
	select {
	case <-ar.WaitCh():
		t.Fatal("a service allocation was stopped by max_run_duration")
	case <-time.After(300 * time.Millisecond):
	}
}

// A max_run_duration added by an in-place update reaches the running
// allocation.
func TestAllocRunner_MaxRunDurationInPlaceUpdate(t *testing.T) {
	d := mock.New()
	a := testutil.Alloc(structs.JobTypeBatch, testutil.MockTask("main", map[string]any{"run_for": "-1s"}))
	ar, rec := newRunner(t, a, d)
	waitStatus(t, rec, structs.AllocClientStatusRunning)
	next := a.CopySkipJob()
	next.Job = a.Job.Copy()
	limit := 100 * time.Millisecond
	next.Job.TaskGroups[0].MaxRunDuration = &limit
	ar.Update(next)
	got := waitStatus(t, rec, structs.AllocClientStatusComplete)
	if got.ClientDescription != MaxRunExceededDesc {
		t.Fatalf("client description %q, want %q", got.ClientDescription, MaxRunExceededDesc)
	}
}
