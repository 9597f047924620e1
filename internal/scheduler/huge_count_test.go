package scheduler

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// A group count of a billion already in the state (committed before
// job_max_count existed, replayed from the Raft log) places what the
// cluster holds and stops: the rest are counted as coalesced failures and
// queued, not built one by one. Before the reconciler named fresh
// allocations lazily, this pass built a billion names and ran the server
// out of memory.
func TestServiceHugeCountPlacesWhatFits(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1")) // 3900 MHz usable: 7 allocs of 500
	h.State.UpsertNode(mockNode("n2"))
	const count = 1_000_000_000
	job := mockJob("web", count)
	h.State.UpsertJob(job)
	eval := mockEval(job)
	process(t, h, eval)

	if got := len(liveAllocs(h, "web")); got != 14 {
		t.Fatalf("placed %d, want 14", got)
	}
	e := lastEval(t, h)
	m := e.FailedTGAllocs["web"]
	if m == nil || m.CoalescedFailures != count-14-1 {
		t.Fatalf("failed metrics = %+v", m)
	}
	if e.QueuedAllocations["web"] != count-14 {
		t.Fatalf("queued = %v", e.QueuedAllocations)
	}
	if len(h.CreateEvals) != 1 || h.CreateEvals[0].Status != structs.EvalStatusBlocked {
		t.Fatalf("want one blocked eval for the rest, got %+v", h.CreateEvals)
	}
	if err := h.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// A pass whose job is purged, stopped or registered anew meanwhile stops
// early: the evaluation is cancelled and no plan is submitted.
func TestServiceSupersededPassStopsEarly(t *testing.T) {
	h := NewHarness()
	for _, id := range []string{"n1", "n2", "n3", "n4"} {
		n := mockNode(id)
		n.NodeResources.Cpu.CpuShares = 1_000_000
		n.NodeResources.Memory.MemoryMB = 1_000_000
		h.State.UpsertNode(n)
	}
	job := mockJob("web", 1000)
	job.TaskGroups[0].Networks = nil
	h.State.UpsertJob(job)
	eval := mockEval(job)

	checks := 0
	cfg := Config{Clock: func() time.Time { return testNow }, Superseded: func(j *structs.Job) bool {
		checks++
		return checks > 2 // the job is purged after the pass has made some placements
	}}
	s, err := NewScheduler(eval.Type, cfg, h.State, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Process(eval); err != nil {
		t.Fatalf("Process: %v", err)
	}
	if len(h.Plans) != 0 {
		t.Fatalf("a superseded pass submitted %d plans", len(h.Plans))
	}
	e := lastEval(t, h)
	if e.Status != structs.EvalStatusCancelled {
		t.Fatalf("eval status %q (%s), want canceled", e.Status, e.StatusDescription)
	}
	if checks != 3 {
		t.Fatalf("superseded checked %d times; want the pass to stop at the first positive check", checks)
	}

	// Not superseded: the same job places all of it.
	h2 := NewHarness()
	for id, n := range h.State.nodes {
		c := *n
		c.ID = id
		h2.State.UpsertNode(&c)
	}
	h2.State.UpsertJob(job)
	cfg.Superseded = func(*structs.Job) bool { return false }
	s, _ = NewScheduler(eval.Type, cfg, h2.State, h2)
	if err := s.Process(mockEval(job)); err != nil {
		t.Fatal(err)
	}
	if got := len(liveAllocs(h2, "web")); got != 1000 {
		t.Fatalf("placed %d, want 1000", got)
	}
}
