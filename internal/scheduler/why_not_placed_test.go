package scheduler

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// Three instances wanting the same static port on one node: one is placed,
// two are queued, and both the eval and its blocked follow-up say why in
// Nomad's words (the port's label and value in DimensionExhausted).
func TestStaticPortCollisionBlocksWithReasons(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	job := mockJob("web", 3)
	job.TaskGroups[0].Networks = []*structs.NetworkResource{{Mode: "host",
		ReservedPorts: []structs.Port{{Label: "http", Value: 8080}}}}
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))

	if got := len(liveAllocs(h, "web")); got != 1 {
		t.Fatalf("placed %d, want 1", got)
	}
	e := lastEval(t, h)
	if e.QueuedAllocations["web"] != 2 {
		t.Fatalf("queued = %v, want web=2", e.QueuedAllocations)
	}
	if len(h.CreateEvals) != 1 {
		t.Fatalf("blocked evals = %d, want 1", len(h.CreateEvals))
	}
	for name, ev := range map[string]*structs.Evaluation{"eval": e, "blocked eval": h.CreateEvals[0]} {
		m := ev.FailedTGAllocs["web"]
		if m == nil {
			t.Fatalf("%s has no FailedTGAllocs", name)
		}
		if m.DimensionExhausted["network: reserved port collision http=8080"] != 1 ||
			m.NodesExhausted != 1 || m.NodesEvaluated != 1 || m.CoalescedFailures != 1 {
			t.Fatalf("%s metrics = %+v", name, m)
		}
	}

	// Re-processing the blocked eval while the port is still taken re-blocks
	// it with fresh reasons.
	process(t, h, h.CreateEvals[0])
	if len(h.ReblockEvals) != 1 {
		t.Fatalf("reblocks = %d", len(h.ReblockEvals))
	}
	if m := h.ReblockEvals[0].FailedTGAllocs["web"]; m == nil || m.NodesExhausted != 1 {
		t.Fatalf("reblocked eval metrics = %+v", m)
	}
}

// A constraint no node meets: the blocked eval names it, keyed by the
// constraint's string form.
func TestBlockedEvalNamesConstraint(t *testing.T) {
	h := NewHarness()
	h.State.UpsertNode(mockNode("n1"))
	h.State.UpsertNode(mockNode("n2"))
	job := mockJob("web", 1)
	job.TaskGroups[0].Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "windows", Operand: "="}}
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))
	if len(h.CreateEvals) != 1 {
		t.Fatalf("blocked evals = %d", len(h.CreateEvals))
	}
	m := h.CreateEvals[0].FailedTGAllocs["web"]
	if m == nil || m.ConstraintFiltered["${attr.kernel.name} = windows"] != 2 || m.NodesFiltered != 2 || m.NodesEvaluated != 2 {
		t.Fatalf("blocked eval metrics = %+v", m)
	}
}
