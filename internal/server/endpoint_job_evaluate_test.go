package server

import (
	"testing"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/structs"
)

// job eval -force-reschedule marks the job's failed allocations for an
// immediate replacement, with the evaluation, in one entry; without the
// option nothing is marked. Before, the option was accepted and ignored:
// a failed allocation past its reschedule attempts stayed unreplaced.
func TestJobEvaluateForceRescheduleMarksFailedAllocs(t *testing.T) {
	s := testServer(t, func(c *Config) { c.EnabledSchedulers = []string{structs.JobTypeSysBatch} })
	node := testNode(t, s, 4000, 4096)
	job := testJob("web", 2)
	job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 1, Interval: 3600e9, Delay: 5e9, DelayFunction: "constant"}
	register(t, s, job)
	job, err := s.State().JobByID(nil, "default", "web")
	if err != nil || job == nil {
		t.Fatalf("job: %v", err)
	}
	var allocs []*structs.Allocation
	for i := 0; i < 2; i++ {
		allocs = append(allocs, &structs.Allocation{ID: uuid.NewString(), Namespace: "default", JobID: "web", Job: job,
			TaskGroup: "web", Name: "web.web[" + string(rune('0'+i)) + "]", NodeID: node.ID,
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
			AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
				"t": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64}},
			}}})
	}
	pending, err := s.planQueue.Enqueue(&structs.Plan{Priority: 50, Job: job,
		NodeAllocation: map[string][]*structs.Allocation{node.ID: allocs}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := pending.Wait(); err != nil || len(res.NodeAllocation[node.ID]) != 2 {
		t.Fatalf("placement: %+v, %v", res, err)
	}
	up := []*structs.Allocation{
		{ID: allocs[0].ID, NodeID: node.ID, ClientStatus: structs.AllocClientStatusFailed},
		{ID: allocs[1].ID, NodeID: node.ID, ClientStatus: structs.AllocClientStatusRunning},
	}
	if _, _, err := s.raftApply(structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{Alloc: up}); err != nil {
		t.Fatal(err)
	}
	forced := func(id string) bool {
		a, err := s.State().AllocByID(nil, id)
		if err != nil || a == nil {
			t.Fatalf("alloc %s: %v", id, err)
		}
		return a.DesiredTransition.ForceReschedule != nil && *a.DesiredTransition.ForceReschedule
	}

	var reply structs.JobRegisterResponse
	if err := s.RPC("Job.Evaluate", &structs.JobEvaluateRequest{JobID: "web",
		WriteRequest: structs.WriteRequest{Namespace: "default"}}, &reply); err != nil {
		t.Fatal(err)
	}
	if forced(allocs[0].ID) {
		t.Fatal("a plain evaluation marked the failed allocation for a forced reschedule")
	}
	if err := s.RPC("Job.Evaluate", &structs.JobEvaluateRequest{JobID: "web", EvalOptions: structs.EvalOptions{ForceReschedule: true},
		WriteRequest: structs.WriteRequest{Namespace: "default"}}, &reply); err != nil {
		t.Fatal(err)
	}
	if !forced(allocs[0].ID) {
		t.Fatal("job eval -force-reschedule: the failed allocation is not marked ForceReschedule")
	}
	if forced(allocs[1].ID) {
		t.Fatal("job eval -force-reschedule marked a running allocation")
	}
	ev, err := s.State().EvalByID(nil, reply.EvalID)
	if err != nil || ev == nil || ev.JobID != "web" || reply.EvalCreateIndex == 0 {
		t.Fatalf("evaluation %+v (%v), reply %+v", ev, err, reply)
	}
}
