package scheduler

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// stickyJob is a one-allocation service job whose ephemeral disk is
// sticky (or migrates).
func stickyJob(id string, sticky, migrate bool) *structs.Job {
	j := mockJob(id, 1)
	j.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{SizeMB: 150, Sticky: sticky, Migrate: migrate}
	return j
}

// onlyAlloc is the job's one live allocation.
func onlyAlloc(t *testing.T, h *Harness, jobID string) *structs.Allocation {
	t.Helper()
	live := liveAllocs(h, jobID)
	if len(live) != 1 {
		t.Fatalf("%d live allocations, want 1", len(live))
	}
	return live[0]
}

// A destructive update of a group with a sticky (or migrating) ephemeral
// disk places the replacement on the previous allocation's node and
// records the previous allocation, among several equally good nodes.
func TestStickyDiskReplacementPrefersPreviousNode(t *testing.T) {
	for _, c := range []struct {
		name            string
		sticky, migrate bool
	}{{"sticky", true, false}, {"migrate", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			h := NewHarness()
			for _, id := range []string{"n1", "n2", "n3", "n4", "n5", "n6"} {
				h.State.UpsertNode(mockNode(id))
			}
			j := stickyJob("cache", c.sticky, c.migrate)
			h.State.UpsertJob(j)
			process(t, h, mockEval(j))
			running(h, "cache")
			prev := onlyAlloc(t, h, "cache")
			for i := 0; i < 4; i++ {
				v := reregister(t, h, "cache", func(j *structs.Job) {
					j.TaskGroups[0].Meta = map[string]string{"v": string(rune('a' + i))}
				})
				cur := onlyAlloc(t, h, "cache")
				if cur.ID == prev.ID || cur.Job.Version != v.Version {
					t.Fatalf("update %d did not replace the allocation", i)
				}
				if cur.NodeID != prev.NodeID {
					t.Fatalf("update %d placed the replacement on %s, want the previous node %s", i, cur.NodeID, prev.NodeID)
				}
				if cur.PreviousAllocation != prev.ID {
					t.Fatalf("PreviousAllocation %q, want %q", cur.PreviousAllocation, prev.ID)
				}
				running(h, "cache")
				prev = cur
			}
			if err := h.CheckInvariants(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// When the previous node can no longer take the allocation (a constraint
// now excludes it, or it is ineligible) the replacement goes elsewhere and
// still records its previous allocation.
func TestStickyDiskFallsBackWhenPreviousNodeInfeasible(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(h *Harness, nodeID string) func(*structs.Job)
	}{
		{"constraint", func(h *Harness, nodeID string) func(*structs.Job) {
			return func(j *structs.Job) {
				j.TaskGroups[0].Constraints = append(j.TaskGroups[0].Constraints,
					&structs.Constraint{LTarget: "${node.unique.id}", RTarget: nodeID, Operand: "!="})
			}
		}},
		{"ineligible", func(h *Harness, nodeID string) func(*structs.Job) {
			n, _ := h.State.NodeByID(nil, nodeID)
			c := n.Copy()
			c.SchedulingEligibility = structs.NodeSchedulingIneligible
			h.State.UpsertNode(c)
			return func(j *structs.Job) { j.TaskGroups[0].Meta = map[string]string{"v": "2"} }
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := NewHarness()
			for _, id := range []string{"n1", "n2", "n3"} {
				h.State.UpsertNode(mockNode(id))
			}
			j := stickyJob("cache", true, false)
			h.State.UpsertJob(j)
			process(t, h, mockEval(j))
			running(h, "cache")
			prev := onlyAlloc(t, h, "cache")
			reregister(t, h, "cache", c.change(h, prev.NodeID))
			cur := onlyAlloc(t, h, "cache")
			if cur.ID == prev.ID {
				t.Fatal("the allocation was not replaced")
			}
			if cur.NodeID == prev.NodeID {
				t.Fatalf("the replacement was placed on the excluded node %s", prev.NodeID)
			}
			if cur.PreviousAllocation != prev.ID {
				t.Fatalf("PreviousAllocation %q, want %q", cur.PreviousAllocation, prev.ID)
			}
		})
	}
}
