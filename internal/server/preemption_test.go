package server

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// TestServicePreemptionEvictsLowerPriority runs the real pipeline (job
// register → eval broker → scheduler → plan applier → Raft → state): a
// high-priority service job, with service preemption enabled, evicts a
// low-priority job's allocation on a full node; with it disabled (the
// default) the same job stays blocked.
func TestServicePreemptionEvictsLowerPriority(t *testing.T) {
	cases := []struct {
		name    string
		enabled bool
	}{
		{"enabled evicts", true},
		{"default keeps the low job", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := testServer(t, func(cfg *Config) { cfg.PreemptionServiceEnabled = c.enabled })
			testNode(t, s, 1000, 1024)

			low := testJob("low", 1)
			low.Priority = 20
			low.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 800, MemoryMB: 512}
			if ev := evalDone(t, s, register(t, s, low).EvalID); ev.Status != structs.EvalStatusComplete {
				t.Fatalf("low eval %s: %s", ev.Status, ev.StatusDescription)
			}
			victims := liveAllocs(t, s, "low")
			if len(victims) != 1 {
				t.Fatalf("low allocs = %d", len(victims))
			}

			high := testJob("high", 1)
			high.Priority = 80
			high.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 600, MemoryMB: 256}
			evalDone(t, s, register(t, s, high).EvalID)

			placed := liveAllocs(t, s, "high")
			stored, err := s.State().AllocByID(nil, victims[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if !c.enabled {
				if len(placed) != 0 || stored.DesiredStatus != structs.AllocDesiredStatusRun {
					t.Fatalf("preemption off: high placed %d, low desired %q", len(placed), stored.DesiredStatus)
				}
				return
			}
			if len(placed) != 1 {
				t.Fatalf("high allocs = %d, want 1", len(placed))
			}
			if stored.DesiredStatus != structs.AllocDesiredStatusEvict || stored.PreemptedByAllocation != placed[0].ID {
				t.Fatalf("low alloc: desired %q preempted by %q, want evict by %s",
					stored.DesiredStatus, stored.PreemptedByAllocation, placed[0].ID)
			}
			if got := placed[0].PreemptedAllocations; len(got) != 1 || got[0] != victims[0].ID {
				t.Fatalf("PreemptedAllocations = %v, want [%s]", got, victims[0].ID)
			}
			waitFor(t, 5*time.Second, "low alloc no longer live", func() bool { return len(liveAllocs(t, s, "low")) == 0 })

			// The evicted job is evaluated again: with no room left it ends up
			// blocked, waiting for capacity, instead of silently losing its alloc.
			waitFor(t, 10*time.Second, "a preemption eval for the evicted job, then a blocked eval", func() bool {
				evals, err := s.State().EvalsByJob(nil, "default", "low")
				if err != nil {
					t.Fatal(err)
				}
				var preempt, blocked bool
				for _, e := range evals {
					preempt = preempt || (e.TriggeredBy == structs.EvalTriggerPreemption && e.TerminalStatus())
					blocked = blocked || e.Status == structs.EvalStatusBlocked
				}
				return preempt && blocked
			})
		})
	}
}
