package scheduler

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkServicePass measures one scheduling pass placing 1000 allocs
// over 1000 nodes (reconcile, feasibility, bin-pack with port indexes,
// and the harness's applier-style re-check).
func BenchmarkServicePass(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		h := NewHarness()
		for n := 0; n < 1000; n++ {
			h.State.UpsertNode(mockNode(fmt.Sprintf("node-%04d", n)))
		}
		job := mockJob("bench", 1000)
		h.State.UpsertJob(job)
		s, err := NewScheduler("service", Config{Clock: func() time.Time { return testNow }}, h.State, h)
		if err != nil {
			b.Fatal(err)
		}
		eval := mockEval(job)
		b.StartTimer()
		if err := s.Process(eval); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if got := len(h.Plans[0].NodeAllocation); got == 0 {
			b.Fatal("nothing placed")
		}
		if e := h.Evals[len(h.Evals)-1]; e.QueuedAllocations["bench"] != 0 {
			b.Fatalf("queued = %v", e.QueuedAllocations)
		}
	}
}

// BenchmarkInPlacePass measures the pass after a count change of a running
// 1000-allocation job (max_parallel 1): every allocation is checked on its
// own node and updated in place, and one more is placed.
func BenchmarkInPlacePass(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		h := NewHarness()
		for n := 0; n < 1000; n++ {
			h.State.UpsertNode(mockNode(fmt.Sprintf("node-%04d", n)))
		}
		job := updateJob("bench", 1000, 1, 0)
		h.State.UpsertJob(job)
		s, err := NewScheduler("service", Config{Clock: func() time.Time { return testNow }}, h.State, h)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Process(mockEval(job)); err != nil {
			b.Fatal(err)
		}
		next := job.Copy()
		next.JobModifyIndex = 0
		next.TaskGroups[0].Count = 1001
		h.State.UpsertJob(next)
		eval := mockEval(next)
		plans := len(h.Plans)
		b.StartTimer()
		if err := s.Process(eval); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		placed, stopped := planned(h.Plans[plans])
		if len(placed) != 1001 || len(stopped) != 0 {
			b.Fatalf("placed %d stopped %d", len(placed), len(stopped))
		}
	}
}
