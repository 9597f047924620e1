package server

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// Verification from the memoised sums must decide every node plan exactly
// as the full check (AllocsFit over the node's allocations) does, and must
// leave to the full check whatever involves ports.
func TestEvaluateNodeTotalsMatchesFullCheck(t *testing.T) {
	h := newPipelineHarness(t)
	existing := []*structs.Allocation{h.alloc("e1", 300), h.alloc("e2", 300)}
	done := h.alloc("e3", 900)
	done.ClientStatus = structs.AllocClientStatusComplete // holds nothing
	if err := h.st.UpsertAllocs(20, append(existing, done)); err != nil {
		t.Fatal(err)
	}
	withPort := h.alloc("p1", 100)
	withPort.AllocatedResources.Shared.Ports = []structs.AllocatedPortMapping{{Label: "http", Value: 8080}}
	resized := h.alloc("e1", 600)

	cases := []struct {
		name                 string
		place, stop          []*structs.Allocation
		maxAllocs            int
		ineligible, wantFast bool
		wantFit              bool
		wantDim              string
	}{
		{name: "fits", place: []*structs.Allocation{h.alloc("n1", 300)}, wantFast: true, wantFit: true},
		{name: "cpu exhausted", place: []*structs.Allocation{h.alloc("n1", 500)}, wantFast: true, wantDim: "cpu"},
		{name: "a stop frees room", place: []*structs.Allocation{h.alloc("n1", 500)}, stop: existing[:1], wantFast: true, wantFit: true},
		{name: "in-place resize", place: []*structs.Allocation{resized}, wantFast: true, wantFit: true},
		{name: "max allocs", place: []*structs.Allocation{h.alloc("n1", 10), h.alloc("n2", 10)}, maxAllocs: 3, wantFast: true, wantDim: "max allocs"},
		{name: "ineligible: new", place: []*structs.Allocation{h.alloc("n1", 10)}, ineligible: true, wantFast: true, wantDim: "node is not eligible"},
		{name: "ineligible: update", place: []*structs.Allocation{resized}, ineligible: true, wantFast: true, wantFit: true},
		{name: "ports: full check", place: []*structs.Allocation{withPort}, wantFit: true},
	}
	for _, tc := range cases {
		node := h.node.Copy()
		node.NodeMaxAllocs = tc.maxAllocs
		if err := h.st.UpsertNode(30, node); err != nil {
			t.Fatal(err)
		}
		elig := structs.NodeSchedulingEligible
		if tc.ineligible {
			elig = structs.NodeSchedulingIneligible
		}
		if err := h.st.UpdateNodeEligibility(31, node.ID, elig, 1, nil); err != nil {
			t.Fatal(err)
		}
		snap, err := h.st.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if node, err = snap.NodeByID(nil, node.ID); err != nil || node.SchedulingEligibility != elig || node.NodeMaxAllocs != tc.maxAllocs {
			t.Fatalf("%s: node %+v, %v", tc.name, node, err)
		}
		plan := &structs.Plan{Job: h.job, NodeAllocation: map[string][]*structs.Allocation{node.ID: tc.place},
			NodeUpdate: map[string][]*structs.Allocation{node.ID: tc.stop}}

		_, _, fast, err := evaluateNodeTotals(&planView{snap: snap}, plan, node, tc.place)
		if err != nil || fast != tc.wantFast {
			t.Fatalf("%s: decided from sums %v (err %v), want %v", tc.name, fast, err, tc.wantFast)
		}
		fit, dim, err := evaluateNodePlan(&planView{snap: snap}, plan, node.ID)
		// A layer that names the node (removing nothing) forces the full check.
		touched := newPlanDelta()
		touched.set(node.ID, "nothing", nil)
		fullFit, fullDim, fullErr := evaluateNodePlan(&planView{snap: snap, layers: []*planDelta{touched}}, plan, node.ID)
		if err != nil || fullErr != nil || fit != fullFit || dim != fullDim {
			t.Fatalf("%s: from sums %v %q (%v), full check %v %q (%v)", tc.name, fit, dim, err, fullFit, fullDim, fullErr)
		}
		if fit != tc.wantFit || dim != tc.wantDim {
			t.Fatalf("%s: %v %q, want %v %q", tc.name, fit, dim, tc.wantFit, tc.wantDim)
		}
	}
}
