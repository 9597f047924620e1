package server

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// Verification from the memoised sums must decide every node plan exactly
// as the full check (AllocsFit over the node's allocations) does, on the
// snapshot alone and with plans verified ahead of it, and must leave to the
// full check whatever involves ports.
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

		view := &planView{snap: snap}
		fit, dim, fast, err := evaluateNodeTotals(view, plan, node, tc.place)
		if err != nil || fast != tc.wantFast {
			t.Fatalf("%s: decided from sums %v (err %v), want %v", tc.name, fast, err, tc.wantFast)
		}
		if !fast {
			fit, dim, err = evaluateNodePlan(view, plan, node.ID)
		}
		fullFit, fullDim, fullErr := evaluateNodeExact(view, plan, node, tc.place)
		if err != nil || fullErr != nil || fit != fullFit || dim != fullDim {
			t.Fatalf("%s: from sums %v %q (%v), full check %v %q (%v)", tc.name, fit, dim, err, fullFit, fullDim, fullErr)
		}
		if fit != tc.wantFit || dim != tc.wantDim {
			t.Fatalf("%s: %v %q, want %v %q", tc.name, fit, dim, tc.wantFit, tc.wantDim)
		}
	}
}

// Plans verified ahead of this one (not yet in the snapshot) change what the
// node holds: the sums must follow them as the full check does.
func TestEvaluateNodeTotalsFollowsPlansAhead(t *testing.T) {
	h := newPipelineHarness(t)
	if err := h.st.UpsertAllocs(20, []*structs.Allocation{h.alloc("e1", 300), h.alloc("e2", 300)}); err != nil {
		t.Fatal(err)
	}
	snap, err := h.st.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	node, _ := snap.NodeByID(nil, h.node.ID)
	ahead := func(f func(d *planDelta)) []*planDelta {
		d := newPlanDelta()
		f(d)
		return []*planDelta{d}
	}
	cases := []struct {
		name    string
		layers  []*planDelta
		place   []*structs.Allocation
		stop    []*structs.Allocation
		wantFit bool
	}{
		{name: "placed ahead fills the node", place: []*structs.Allocation{h.alloc("n2", 300)},
			layers: ahead(func(d *planDelta) { d.set(node.ID, "n1", h.alloc("n1", 300)) })},
		{name: "stopped ahead frees room", place: []*structs.Allocation{h.alloc("n2", 600)}, wantFit: true,
			layers: ahead(func(d *planDelta) { d.set(node.ID, "e1", nil) })},
		{name: "resized ahead", place: []*structs.Allocation{h.alloc("n2", 300)},
			layers: ahead(func(d *planDelta) { d.set(node.ID, "e1", h.alloc("e1", 500)) })},
		{name: "stop of what was placed ahead", place: []*structs.Allocation{h.alloc("n2", 400)}, wantFit: true,
			stop:   []*structs.Allocation{h.alloc("n1", 300)},
			layers: ahead(func(d *planDelta) { d.set(node.ID, "n1", h.alloc("n1", 300)) })},
		{name: "two layers: the newer wins", place: []*structs.Allocation{h.alloc("n2", 300)}, wantFit: true,
			layers: append(ahead(func(d *planDelta) { d.set(node.ID, "n1", h.alloc("n1", 300)) }),
				ahead(func(d *planDelta) { d.set(node.ID, "n1", nil) })...)},
	}
	for _, tc := range cases {
		view := &planView{snap: snap, layers: tc.layers}
		plan := &structs.Plan{Job: h.job, NodeAllocation: map[string][]*structs.Allocation{node.ID: tc.place},
			NodeUpdate: map[string][]*structs.Allocation{node.ID: tc.stop}}
		fit, dim, fast, err := evaluateNodeTotals(view, plan, node, tc.place)
		fullFit, fullDim, fullErr := evaluateNodeExact(view, plan, node, tc.place)
		if err != nil || fullErr != nil || !fast || fit != fullFit || dim != fullDim || fit != tc.wantFit {
			t.Fatalf("%s: from sums %v %q (fast %v, %v), full check %v %q (%v), want fit %v",
				tc.name, fit, dim, fast, err, fullFit, fullDim, fullErr, tc.wantFit)
		}
	}
}

// A follow-up eval ID written on a failed allocation, or an allocation
// marked unknown, lands on a node that is down: it claims nothing. A new
// placement there does not.
func TestEvaluateNodePlanAttributeUpdatesOnDownNode(t *testing.T) {
	h := newPipelineHarness(t)
	failed := h.alloc("f1", 300)
	failed.ClientStatus = structs.AllocClientStatusFailed
	live := h.alloc("r1", 300)
	live.ClientStatus = structs.AllocClientStatusRunning
	if err := h.st.UpsertAllocs(20, []*structs.Allocation{failed, live}); err != nil {
		t.Fatal(err)
	}
	node := h.node
	if err := h.st.UpdateNodeStatus(30, node.ID, structs.NodeStatusDown, 1, nil); err != nil {
		t.Fatal(err)
	}
	snap, err := h.st.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := snap.NodeByID(nil, node.ID); n.Status != structs.NodeStatusDown {
		t.Fatalf("node %s", n.Status)
	}
	followup := failed.CopySkipJob()
	followup.FollowupEvalID = "fe"
	unknown := live.CopySkipJob()
	unknown.ClientStatus = structs.AllocClientStatusUnknown
	for _, tc := range []struct {
		name  string
		place []*structs.Allocation
		want  bool
	}{
		{"follow-up on a failed alloc", []*structs.Allocation{followup}, true},
		{"marked unknown", []*structs.Allocation{unknown}, true},
		{"new placement", []*structs.Allocation{followup, h.alloc("n1", 10)}, false},
		{"in-place update of a running alloc", []*structs.Allocation{live.CopySkipJob()}, false},
	} {
		plan := &structs.Plan{Job: h.job, NodeAllocation: map[string][]*structs.Allocation{node.ID: tc.place}}
		fit, _, err := evaluateNodePlan(&planView{snap: snap}, plan, node.ID)
		if err != nil || fit != tc.want {
			t.Errorf("%s: fit %v (%v), want %v", tc.name, fit, err, tc.want)
		}
	}
}
