package deploywatch

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/server/clock"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// fakeApplier records the watcher's writes and applies them to the state
// store with the FSM's state methods, so the watcher sees its own effects.
type fakeApplier struct {
	h *harness

	mu        sync.Mutex
	statuses  []*structs.DeploymentStatusUpdateRequest
	promotes  []*structs.ApplyDeploymentPromoteRequest
	desired   []*structs.AllocUpdateDesiredTransitionRequest
	evalBatch [][]*structs.Evaluation
}

func (f *fakeApplier) UpdateDeploymentStatus(req *structs.DeploymentStatusUpdateRequest) (uint64, error) {
	defer f.record(func() { f.statuses = append(f.statuses, req) })
	idx := f.h.next()
	return idx, f.h.store.UpdateDeploymentStatus(idx, req)
}

func (f *fakeApplier) PromoteDeployment(req *structs.ApplyDeploymentPromoteRequest) (uint64, error) {
	defer f.record(func() { f.promotes = append(f.promotes, req) })
	idx := f.h.next()
	return idx, f.h.store.UpdateDeploymentPromotion(idx, req)
}

func (f *fakeApplier) UpdateAllocDesiredTransition(req *structs.AllocUpdateDesiredTransitionRequest) (uint64, error) {
	defer f.record(func() { f.desired = append(f.desired, req) })
	idx := f.h.next()
	return idx, f.h.store.UpdateAllocsDesiredTransitions(idx, req.Allocs, req.Evals)
}

func (f *fakeApplier) UpsertEvals(evals []*structs.Evaluation) (uint64, error) {
	defer f.record(func() { f.evalBatch = append(f.evalBatch, evals) })
	idx := f.h.next()
	return idx, f.h.store.UpsertEvals(idx, evals)
}

// record notes a write once it is applied (deferred by each method), so a
// test that sees it counted also sees its effect in state.
func (f *fakeApplier) record(add func()) {
	f.mu.Lock()
	add()
	f.mu.Unlock()
}

// counts returns how many writes of each kind were made.
func (f *fakeApplier) counts() (statuses, promotes, desired, evals int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.statuses), len(f.promotes), len(f.desired), len(f.evalBatch)
}

type harness struct {
	t     *testing.T
	store *state.StateStore
	clk   *clock.Fake
	app   *fakeApplier
	w     *Watcher

	mu  sync.Mutex
	idx uint64
}

func newHarness(t *testing.T) *harness {
	st, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, store: st, clk: clock.NewFake(t0), idx: 100}
	h.app = &fakeApplier{h: h}
	h.w = New(Config{State: func() *state.StateStore { return st }, Applier: h.app, Clock: h.clk})
	t.Cleanup(func() { h.w.SetEnabled(false) })
	return h
}

func (h *harness) next() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.idx++
	return h.idx
}

func (h *harness) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// job stores a service job (version 0 stable when stable is set) and
// returns the stored copy.
func (h *harness) job(meta string, stable bool) *structs.Job {
	j := &structs.Job{Namespace: "default", ID: "web", Name: "web", Type: structs.JobTypeService, Priority: 50, Stable: stable,
		Meta: map[string]string{"v": meta},
		TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 2, ReschedulePolicy: &structs.ReschedulePolicy{Unlimited: true},
			Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec"}}}}}
	h.must(h.store.UpsertJob(h.next(), nil, j))
	out, err := h.store.JobByID(nil, "default", "web")
	h.must(err)
	return out
}

func (h *harness) deployment(job *structs.Job, status string, st *structs.DeploymentState) *structs.Deployment {
	d := &structs.Deployment{ID: "dep-" + fmt.Sprint(job.Version), Namespace: "default", JobID: job.ID, JobVersion: job.Version,
		JobCreateIndex: job.CreateIndex, JobModifyIndex: job.JobModifyIndex, Status: status,
		TaskGroups: map[string]*structs.DeploymentState{"g": st}}
	h.must(h.store.UpsertDeployment(h.next(), d))
	return d
}

func (h *harness) alloc(id string, job *structs.Job, d *structs.Deployment) {
	h.must(h.store.UpsertAllocs(h.next(), []*structs.Allocation{{ID: id, Namespace: "default", JobID: job.ID, Job: job,
		TaskGroup: "g", Name: structs.AllocName(job.ID, "g", 0), NodeID: "n1", DeploymentID: d.ID,
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning}}))
}

func (h *harness) health(id string, healthy bool) {
	h.must(h.store.UpdateAllocsFromClient(h.next(), []*structs.Allocation{{ID: id, ClientStatus: structs.AllocClientStatusRunning,
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: h.clk.Now()}}}))
}

func (h *harness) dep(id string) *structs.Deployment {
	d, err := h.store.DeploymentByID(nil, id)
	h.must(err)
	return d
}

// waitPending waits until n timers are armed on the fake clock: the
// watcher has acted on what state holds.
func (h *harness) waitPending(n int) {
	h.t.Helper()
	waitFor(h.t, fmt.Sprintf("%d armed timers", n), func() bool { return h.clk.Pending() == n })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second) // bounds a hang only: the race step runs on 2 loaded cores
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestWatcher_HealthyAllocsMakeOneEvalPerBatch(t *testing.T) {
	h := newHarness(t)
	job := h.job("a", false)
	d := h.deployment(job, structs.DeploymentStatusRunning, &structs.DeploymentState{DesiredTotal: 3})
	h.alloc("a1", job, d)
	h.alloc("a2", job, d)
	h.health("a1", true)
	h.w.SetEnabled(true)
	h.health("a2", true)

	h.waitPending(1) // the eval batch's window
	h.clk.Advance(DefaultEvalBatchWindow)
	waitFor(t, "the batched eval", func() bool { _, _, _, e := h.app.counts(); return e == 1 })
	h.app.mu.Lock()
	evals := h.app.evalBatch[0]
	h.app.mu.Unlock()
	if len(evals) != 1 || evals[0].TriggeredBy != structs.EvalTriggerDeploymentWatcher || evals[0].DeploymentID != d.ID || evals[0].JobID != "web" {
		t.Fatalf("evals = %+v, want one deployment-watcher eval of job web for %s", evals, d.ID)
	}

	// The stored eval is newer than both healths: nothing more until a
	// third allocation becomes healthy.
	h.alloc("a3", job, d)
	h.health("a3", true)
	h.waitPending(1)
	h.clk.Advance(DefaultEvalBatchWindow)
	waitFor(t, "a second eval", func() bool { _, _, _, e := h.app.counts(); return e == 2 })
	if s, p, dt, _ := h.app.counts(); s+p+dt != 0 {
		t.Fatalf("unexpected writes: statuses %d promotes %d transitions %d", s, p, dt)
	}
}

func TestWatcher_UnhealthyAllocIsReplaced(t *testing.T) {
	h := newHarness(t)
	job := h.job("a", false)
	d := h.deployment(job, structs.DeploymentStatusRunning, &structs.DeploymentState{DesiredTotal: 2, ProgressDeadline: 10 * time.Minute})
	h.alloc("a1", job, d)
	h.alloc("a2", job, d)
	h.w.SetEnabled(true)
	h.health("a1", false)
	h.health("a2", false)
	h.waitPending(1)
	h.clk.Advance(DefaultAllocBatchWindow)
	waitFor(t, "the replacement", func() bool { _, _, dt, _ := h.app.counts(); return dt == 1 })
	h.app.mu.Lock()
	req := h.app.desired[0]
	h.app.mu.Unlock()
	if len(req.Allocs) != 2 || !isSet(req.Allocs["a1"].Reschedule) || !isSet(req.Allocs["a2"].Reschedule) {
		t.Fatalf("transitions = %+v, want a1 and a2 rescheduled", req.Allocs)
	}
	if len(req.Evals) != 1 || req.Evals[0].TriggeredBy != structs.EvalTriggerDeploymentWatcher {
		t.Fatalf("evals = %+v, want one deployment-watcher eval", req.Evals)
	}
	if got := h.dep(d.ID); got.Status != structs.DeploymentStatusRunning {
		t.Fatalf("deployment %s (%s), want running: a progress deadline allows replacements", got.Status, got.StatusDescription)
	}
	// Marked: the watcher arms nothing more for them.
	h.waitPending(0)
	if _, _, dt, _ := h.app.counts(); dt != 1 {
		t.Fatalf("%d transition writes, want 1", dt)
	}
}

func TestWatcher_UnhealthyWithoutDeadlineFailsAndRevertsToStable(t *testing.T) {
	h := newHarness(t)
	stable := h.job("a", true) // version 0, stable
	job := h.job("b", false)   // version 1
	if job.Version != 1 {
		t.Fatalf("job version %d", job.Version)
	}
	d := h.deployment(job, structs.DeploymentStatusRunning, &structs.DeploymentState{DesiredTotal: 2, AutoRevert: true})
	h.alloc("a1", job, d)
	h.w.SetEnabled(true)
	waitFor(t, "the deployment watched", func() bool { return h.w.Watched() == 1 })
	h.health("a1", false)

	waitFor(t, "the deployment failed", func() bool { return h.dep(d.ID).Status == structs.DeploymentStatusFailed })
	got := h.dep(d.ID)
	if want := DescFailedAllocs + " - rolling back to job version 0"; got.StatusDescription != want {
		t.Fatalf("description %q, want %q", got.StatusDescription, want)
	}
	h.app.mu.Lock()
	req := h.app.statuses[0]
	h.app.mu.Unlock()
	if req.Job == nil || req.Job.SpecChanged(stable) || req.Eval == nil || req.Eval.DeploymentID != d.ID {
		t.Fatalf("fail request: job %+v eval %+v, want version 0's spec and an eval", req.Job, req.Eval)
	}
	cur, _ := h.store.JobByID(nil, "default", "web")
	if cur.Version != 2 || cur.Meta["v"] != "a" {
		t.Fatalf("job now version %d meta %v, want version 2 with version 0's spec", cur.Version, cur.Meta)
	}
	waitFor(t, "the watcher to let go", func() bool { return h.w.Watched() == 0 })
	if s, _, _, _ := h.app.counts(); s != 1 {
		t.Fatalf("%d status writes, want 1", s)
	}
}

func TestWatcher_NoRevertWithoutStableVersion(t *testing.T) {
	h := newHarness(t)
	h.job("a", false)
	job := h.job("b", false)
	d := h.deployment(job, structs.DeploymentStatusRunning, &structs.DeploymentState{DesiredTotal: 2, AutoRevert: true})
	h.alloc("a1", job, d)
	h.health("a1", false)
	h.w.SetEnabled(true)
	waitFor(t, "the deployment failed", func() bool { return h.dep(d.ID).Status == structs.DeploymentStatusFailed })
	if got := h.dep(d.ID).StatusDescription; !strings.Contains(got, "no stable job version") {
		t.Fatalf("description %q", got)
	}
	h.app.mu.Lock()
	defer h.app.mu.Unlock()
	if h.app.statuses[0].Job != nil {
		t.Fatal("a job was registered without a stable version to revert to")
	}
}

func TestWatcher_ProgressDeadlineFails_PausedWaits(t *testing.T) {
	h := newHarness(t)
	job := h.job("a", false)
	d := h.deployment(job, structs.DeploymentStatusPaused, &structs.DeploymentState{DesiredTotal: 2,
		ProgressDeadline: time.Minute, RequireProgressBy: t0.Add(time.Minute)})
	h.w.SetEnabled(true)
	h.waitPending(1) // the deadline timer
	passes := h.w.passes.Load()
	h.clk.Advance(time.Hour)
	// Paused: never failed, however late.
	waitFor(t, "a pass after the deadline", func() bool { return h.w.passes.Load() > passes })
	if s, _, _, _ := h.app.counts(); s != 0 {
		t.Fatal("a paused deployment was failed")
	}
	if got := h.dep(d.ID); got.Status != structs.DeploymentStatusPaused {
		t.Fatalf("paused deployment became %s", got.Status)
	}
	// Resumed past its deadline: failed.
	c := *h.dep(d.ID)
	c.Status = structs.DeploymentStatusRunning
	h.must(h.store.UpsertDeployment(h.next(), &c))
	waitFor(t, "the deployment failed", func() bool { return h.dep(d.ID).Status == structs.DeploymentStatusFailed })
	if got := h.dep(d.ID).StatusDescription; got != DescProgressDeadline {
		t.Fatalf("description %q", got)
	}
}

func TestWatcher_AutoPromote(t *testing.T) {
	h := newHarness(t)
	job := h.job("a", false)
	d := h.deployment(job, structs.DeploymentStatusRunning, &structs.DeploymentState{DesiredTotal: 3, DesiredCanaries: 2,
		AutoPromote: true, PlacedCanaries: []string{"c1", "c2"}})
	h.alloc("c1", job, d)
	h.alloc("c2", job, d)
	h.w.SetEnabled(true)
	h.health("c1", true)
	waitFor(t, "the first canary seen", func() bool { return h.clk.Pending() == 1 }) // eval batch
	if _, p, _, _ := h.app.counts(); p != 0 {
		t.Fatal("promoted with one canary of two healthy")
	}
	h.health("c2", true)
	waitFor(t, "the promotion", func() bool { _, p, _, _ := h.app.counts(); return p == 1 })
	h.app.mu.Lock()
	req := h.app.promotes[0]
	h.app.mu.Unlock()
	if !req.All || req.DeploymentID != d.ID || req.Eval == nil || req.Eval.TriggeredBy != structs.EvalTriggerDeploymentWatcher {
		t.Fatalf("promote request %+v", req)
	}
	if !h.dep(d.ID).TaskGroups["g"].Promoted {
		t.Fatal("not promoted")
	}
}

// A watcher disabled and enabled again (leadership lost and regained) on the
// same state rebuilds what it dropped: the eval batch lost with the old run
// is made again, and the progress deadline still fails the deployment once.
func TestWatcher_RestartResumes(t *testing.T) {
	h := newHarness(t)
	job := h.job("a", false)
	d := h.deployment(job, structs.DeploymentStatusRunning, &structs.DeploymentState{DesiredTotal: 2,
		ProgressDeadline: time.Minute, RequireProgressBy: t0.Add(time.Minute)})
	h.alloc("a1", job, d)
	h.health("a1", true)
	h.w.SetEnabled(true)
	h.waitPending(2) // deadline and eval batch
	h.w.SetEnabled(false)
	if n := h.clk.Pending(); n != 0 {
		t.Fatalf("%d timers left armed after disabling", n)
	}
	if s, p, dt, e := h.app.counts(); s+p+dt+e != 0 {
		t.Fatal("a write happened though the run was disabled before any window closed")
	}

	h.w.SetEnabled(true)
	h.waitPending(2)
	h.clk.Advance(DefaultEvalBatchWindow)
	waitFor(t, "the eval made again", func() bool { _, _, _, e := h.app.counts(); return e == 1 })
	h.clk.Advance(time.Minute)
	waitFor(t, "the deployment failed", func() bool { return h.dep(d.ID).Status == structs.DeploymentStatusFailed })
	if s, _, _, _ := h.app.counts(); s != 1 {
		t.Fatalf("%d status writes, want 1", s)
	}
}

// A deployment that has placed every allocation (no max_parallel batch
// left, no canaries) gets no eval while its allocations become healthy one
// by one: the scheduler would have nothing to do. The last one's health
// asks for the one eval that completes the deployment. Before, every batch
// window with a new healthy allocation made an eval (the three-server
// benchmark: 2.6 times the evaluations of one server, its health reports
// spread over more windows).
func TestWatcher_FullyPlacedDeploymentEvalsOnceWhenHealthy(t *testing.T) {
	h := newHarness(t)
	job := h.job("a", false)
	d := h.deployment(job, structs.DeploymentStatusRunning, &structs.DeploymentState{DesiredTotal: 3})
	for _, id := range []string{"a1", "a2", "a3"} {
		h.alloc(id, job, d)
	}
	if got := h.dep(d.ID).TaskGroups["g"].PlacedAllocs; got != 3 {
		t.Fatalf("placed %d, want 3", got)
	}
	h.w.SetEnabled(true)
	for _, id := range []string{"a1", "a2"} {
		passes := h.w.passes.Load()
		h.health(id, true)
		waitFor(t, "the watcher to see "+id+" healthy", func() bool { return h.w.passes.Load() > passes })
		if n := h.clk.Pending(); n != 0 {
			t.Fatalf("%s healthy of 3 placed: %d eval batches armed, want none", id, n)
		}
	}
	h.health("a3", true)
	h.waitPending(1)
	h.clk.Advance(DefaultEvalBatchWindow)
	waitFor(t, "the completing eval", func() bool { _, _, _, e := h.app.counts(); return e == 1 })
}
