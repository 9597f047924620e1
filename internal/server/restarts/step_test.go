package restarts

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

var t0 = time.Unix(1_800_000_000, 0)

func rjob() *structs.Job {
	return &structs.Job{ID: "web", Namespace: "default", Type: "service",
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 3, Tasks: []*structs.Task{{Name: "t"}, {Name: "side"}}}}}
}

func ralloc(i int) *structs.Allocation {
	return &structs.Allocation{ID: fmt.Sprintf("alloc-%d", i), Name: fmt.Sprintf("web.g[%d]", i), TaskGroup: "g",
		Namespace: "default", JobID: "web", DesiredStatus: "run", ClientStatus: "running", CreateIndex: uint64(10 + i),
		TaskStates: map[string]*structs.TaskState{
			"t":    {State: "running", StartedAt: t0.Add(-time.Hour)},
			"side": {State: "running", StartedAt: t0.Add(-time.Hour)},
		}}
}

// world is a job's allocations as the fake client keeps them.
type world struct {
	job    *structs.Job
	allocs map[string]*structs.Allocation
	order  []string
}

func newWorld(n int) *world {
	w := &world{job: rjob(), allocs: map[string]*structs.Allocation{}}
	for i := 0; i < n; i++ {
		a := ralloc(i)
		w.allocs[a.ID] = a
		w.order = append(w.order, a.ID)
	}
	return w
}

func (w *world) list() []*structs.Allocation {
	var out []*structs.Allocation
	for _, id := range w.order {
		out = append(out, w.allocs[id])
	}
	return out
}

// apply writes a step's allocation writes, as the FSM does.
func (w *world) apply(out Output) {
	for _, wr := range out.Writes {
		a := *w.allocs[wr.AllocID]
		if wr.Replace {
			t := true
			a.DesiredTransition.Migrate = &t
		} else {
			r := *wr.Restart
			a.RestartRequest = &r
		}
		w.allocs[a.ID] = &a
	}
}

// restartTasks is the client's answer: every asked task records Restart
// Signaled for the index and runs again from at.
func (w *world) restartTasks(id string, at time.Time) {
	a := *w.allocs[id]
	a.TaskStates = map[string]*structs.TaskState{}
	for name, ts := range w.allocs[id].TaskStates {
		c := *ts
		asked := len(a.RestartRequest.Tasks) == 0
		for _, t := range a.RestartRequest.Tasks {
			asked = asked || t == name
		}
		if asked {
			c.Events = append(append([]*structs.TaskEvent(nil), ts.Events...), &structs.TaskEvent{Type: structs.TaskRestartSignaled,
				Time: at.UnixNano(), Details: map[string]string{structs.TaskEventDetailRestartIndex: fmt.Sprint(a.RestartRequest.Index)}})
			c.StartedAt = at.Add(time.Millisecond)
			c.Restarts++
		}
		a.TaskStates[name] = &c
	}
	w.allocs[id] = &a
}

func start(t *testing.T, w *world, spec structs.JobRestartSpec) *structs.JobRestart {
	t.Helper()
	r, err := Plan("r1", w.job, w.list(), spec, t0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func step(w *world, r *structs.JobRestart, now time.Time) (*structs.JobRestart, Output) {
	out := Step(Input{Restart: r, Job: w.job, Allocs: w.list(), Now: now})
	w.apply(out)
	if out.Restart != nil {
		return out.Restart, out
	}
	return r, out
}

func restarting(r *structs.JobRestart) []string {
	var out []string
	for _, a := range r.Allocs {
		if a.Status == structs.JobRestartAllocRestarting {
			out = append(out, a.AllocID)
		}
	}
	return out
}

// Batches of 2 over 5 allocations: never more than 2 in flight, the next
// batch only once the previous one runs again, then complete.
func TestStepBatches(t *testing.T) {
	w := newWorld(5)
	r := start(t, w, structs.JobRestartSpec{BatchSize: 2})
	if r.BatchSize != 2 || len(r.Allocs) != 5 || r.Status != structs.JobRestartStatusRunning {
		t.Fatalf("plan: %+v", r)
	}
	now := t0
	answered := map[string]bool{}
	var batches [][]string
	for i := 0; i < 20 && r.Status == structs.JobRestartStatusRunning; i++ {
		var out Output
		r, out = step(w, r, now)
		if len(out.Writes) > 0 {
			var ids []string
			for _, wr := range out.Writes {
				if wr.Restart == nil || wr.Restart.Index != 1 || len(wr.Restart.Tasks) != 2 {
					t.Fatalf("write %+v", wr)
				}
				ids = append(ids, wr.AllocID)
			}
			batches = append(batches, ids)
		}
		if n := len(restarting(r)); n > 2 {
			t.Fatalf("%d allocations restarting at once", n)
		}
		// A second look before the client answers changes nothing.
		if again := Step(Input{Restart: r, Job: w.job, Allocs: w.list(), Now: now}); again.Restart != nil || len(again.Writes) > 0 {
			t.Fatalf("step without news changed the restart: %+v", again.Restart)
		}
		for _, id := range restarting(r) {
			if !answered[id] {
				w.restartTasks(id, now.Add(100*time.Millisecond))
				answered[id] = true
			}
		}
		now = now.Add(time.Second)
	}
	if r.Status != structs.JobRestartStatusComplete {
		t.Fatalf("status %s (%s)", r.Status, r.StatusDescription)
	}
	want := "[[alloc-0 alloc-1] [alloc-2 alloc-3] [alloc-4]]"
	if got := fmt.Sprint(batches); got != want {
		t.Fatalf("batches %s, want %s", got, want)
	}
	for _, a := range w.list() {
		if a.TaskStates["t"].Restarts != 1 {
			t.Fatalf("%s restarted %d times", a.ID, a.TaskStates["t"].Restarts)
		}
	}
}

// The batch wait starts once a batch runs again; the next batch waits it out.
func TestStepBatchWait(t *testing.T) {
	w := newWorld(2)
	r := start(t, w, structs.JobRestartSpec{BatchSize: 1, BatchWait: time.Minute})
	r, _ = step(w, r, t0)
	w.restartTasks("alloc-0", t0.Add(time.Second))
	r, out := step(w, r, t0.Add(2*time.Second)) // batch 1 done
	r, out = step(w, r, t0.Add(2*time.Second))  // wait set
	if !out.WakeAt.Equal(t0.Add(2*time.Second+time.Minute)) || len(out.Writes) > 0 {
		t.Fatalf("wait: wake %s writes %d", out.WakeAt, len(out.Writes))
	}
	if _, out = step(w, r, t0.Add(time.Minute)); len(out.Writes) > 0 {
		t.Fatal("next batch started inside the wait")
	}
	r, out = step(w, r, t0.Add(2*time.Second+time.Minute))
	if len(out.Writes) != 1 || out.Writes[0].AllocID != "alloc-1" || r.Batch != 2 {
		t.Fatalf("after the wait: %+v batch %d", out.Writes, r.Batch)
	}
}

// min_healthy_time: a restarted alloc counts once its tasks ran that long.
func TestStepMinHealthyTime(t *testing.T) {
	w := newWorld(2)
	mh, hc := 10*time.Second, "task_states"
	w.job.TaskGroups[0].Update = &structs.UpdateStrategy{MinHealthyTime: &mh, HealthCheck: &hc}
	r := start(t, w, structs.JobRestartSpec{})
	r, _ = step(w, r, t0)
	w.restartTasks("alloc-0", t0)
	r, out := step(w, r, t0.Add(5*time.Second))
	if len(out.Writes) > 0 || r.Allocs[0].Status != structs.JobRestartAllocRestarting {
		t.Fatal("next batch before min_healthy_time")
	}
	if !out.WakeAt.Equal(t0.Add(time.Millisecond + mh)) {
		t.Fatalf("wake at %s", out.WakeAt)
	}
	r, out = step(w, r, t0.Add(11*time.Second))
	if r.Allocs[0].Status != structs.JobRestartAllocDone || len(out.Writes) != 1 {
		t.Fatalf("after min_healthy_time: %s, %d writes", r.Allocs[0].Status, len(out.Writes))
	}
}

func TestStepErrors(t *testing.T) {
	// A task that stays dead fails the restart (on_error fail)...
	w := newWorld(2)
	r := start(t, w, structs.JobRestartSpec{})
	r, _ = step(w, r, t0)
	w.restartTasks("alloc-0", t0)
	w.allocs["alloc-0"].TaskStates["t"].State = "dead"
	r, out := step(w, r, t0.Add(time.Second))
	if r.Status != structs.JobRestartStatusFailed || !strings.Contains(r.StatusDescription, `task "t" did not restart`) || len(out.Writes) > 0 {
		t.Fatalf("%s: %s", r.Status, r.StatusDescription)
	}

	// ... or pauses it (on_error ask); resumed, it goes on with the rest.
	w = newWorld(2)
	r = start(t, w, structs.JobRestartSpec{OnError: structs.JobRestartOnErrorAsk})
	r, _ = step(w, r, t0)
	w.allocs["alloc-0"].ClientStatus = "failed"
	r, _ = step(w, r, t0.Add(time.Second))
	if r.Status != structs.JobRestartStatusPaused || !strings.Contains(r.StatusDescription, "allocation is failed") {
		t.Fatalf("%s: %s", r.Status, r.StatusDescription)
	}
	if out := Step(Input{Restart: r, Job: w.job, Allocs: w.list(), Now: t0.Add(time.Hour)}); out.Restart != nil {
		t.Fatal("a paused restart moved")
	}
	r.Status = structs.JobRestartStatusRunning
	r, out = step(w, r, t0.Add(2*time.Second))
	if len(out.Writes) != 1 || out.Writes[0].AllocID != "alloc-1" {
		t.Fatalf("resumed: %+v", out.Writes)
	}

	// A client that never answers: the deadline fails it.
	w = newWorld(1)
	r = start(t, w, structs.JobRestartSpec{})
	r, _ = step(w, r, t0)
	r, _ = step(w, r, t0.Add(DefaultDeadline+time.Second))
	if r.Status != structs.JobRestartStatusFailed || !strings.Contains(r.StatusDescription, "did not come back within 5m0s") {
		t.Fatalf("%s: %s", r.Status, r.StatusDescription)
	}

	// The job stopped under it.
	w = newWorld(1)
	r = start(t, w, structs.JobRestartSpec{})
	w.job.Stop = true
	if r, _ = step(w, r, t0); r.Status != structs.JobRestartStatusFailed {
		t.Fatalf("job stopped: %s", r.Status)
	}
}

// Reschedule stops allocations (with an eval) and waits for a running
// replacement of the same name.
func TestStepReschedule(t *testing.T) {
	w := newWorld(2)
	r := start(t, w, structs.JobRestartSpec{Reschedule: true})
	if len(r.Allocs[0].Tasks) != 0 {
		t.Fatal("reschedule lists tasks")
	}
	r, out := step(w, r, t0)
	if len(out.Writes) != 1 || !out.Writes[0].Replace || !out.Eval {
		t.Fatalf("writes %+v eval %v", out.Writes, out.Eval)
	}
	repl := ralloc(0)
	repl.ID, repl.CreateIndex, repl.ClientStatus = "alloc-0b", 100, "pending"
	w.allocs[repl.ID] = repl
	w.order = append(w.order, repl.ID)
	if r, out = step(w, r, t0.Add(time.Second)); len(out.Writes) > 0 {
		t.Fatal("next batch while the replacement is pending")
	}
	repl.ClientStatus = "running"
	r, out = step(w, r, t0.Add(2*time.Second))
	if r.Allocs[0].Status != structs.JobRestartAllocDone || r.Allocs[0].ReplacementID != "alloc-0b" || len(out.Writes) != 1 {
		t.Fatalf("replaced: %+v", r.Allocs[0])
	}
}

func TestPlan(t *testing.T) {
	w := newWorld(4)
	w.allocs["alloc-3"].ClientStatus = "complete"
	w.allocs["alloc-2"].TaskStates["side"].State = "dead"
	r, err := Plan("r", w.job, w.list(), structs.JobRestartSpec{BatchSizePercent: 50, Task: "side"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Allocs) != 2 || r.BatchSize != 1 || r.Allocs[0].Tasks[0] != "side" {
		t.Fatalf("plan: %d allocs, batch %d, tasks %v", len(r.Allocs), r.BatchSize, r.Allocs[0].Tasks)
	}
	for _, tc := range []struct {
		spec structs.JobRestartSpec
		want string
	}{
		{structs.JobRestartSpec{Group: "nope"}, `Group: job "web" has no group "nope"`},
		{structs.JobRestartSpec{Task: "nope"}, `Task: no group of job "web" has a task "nope"`},
	} {
		if _, err := Plan("r", w.job, w.list(), tc.spec, t0); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %s", tc.spec, err, tc.want)
		}
	}
	if _, err := Plan("r", w.job, nil, structs.JobRestartSpec{}, t0); err == nil {
		t.Error("a restart of nothing was planned")
	}
}
