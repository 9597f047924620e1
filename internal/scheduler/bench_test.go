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
