package server

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// The Raft entry of a plan carries its job once; placements of that job
// version travel without it and the scheduler's allocations are untouched.
func TestPlanResultRequestCarriesJobOnce(t *testing.T) {
	job := &structs.Job{Namespace: "default", ID: "web", Version: 3, JobModifyIndex: 7}
	older := &structs.Job{Namespace: "default", ID: "web", Version: 2, JobModifyIndex: 5}
	same := *job // same version decoded separately (a plan from another server)
	placed := []*structs.Allocation{
		{ID: "a1", NodeID: "n1", Job: job},
		{ID: "a2", NodeID: "n1", Job: &same},
		{ID: "a3", NodeID: "n1", Job: older},
	}
	plan := &structs.Plan{Job: job, NodeAllocation: map[string][]*structs.Allocation{"n1": placed}}
	result := &structs.PlanResult{NodeAllocation: plan.NodeAllocation}
	req := planResultRequest(plan, result)
	if req.Job != job {
		t.Fatal("request must carry the plan's job")
	}
	got := map[string]*structs.Job{}
	for _, a := range req.Alloc {
		got[a.ID] = a.Job
		if a.ModifyTime == 0 || a.CreateTime == 0 {
			t.Errorf("%s: times not set", a.ID)
		}
	}
	if got["a1"] != nil || got["a2"] != nil {
		t.Errorf("allocs of the plan's job version still carry it: a1=%v a2=%v", got["a1"], got["a2"])
	}
	if got["a3"] != older {
		t.Errorf("alloc of another job version lost its job")
	}
	for _, a := range placed {
		if a.Job == nil {
			t.Fatalf("%s: the scheduler's allocation was modified", a.ID)
		}
		if a.CreateTime == 0 {
			t.Fatalf("%s: the scheduler's allocation lost its create time", a.ID)
		}
	}
}
