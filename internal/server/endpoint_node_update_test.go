package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/structs"
)

// A client's status update creates an evaluation for a failed allocation
// (reschedule) and for one the servers had marked unknown (reconnect), and
// for nothing else.
func TestUpdateAllocEvaluatesFailuresAndReconnects(t *testing.T) {
	// No worker takes service evaluations: the ones the updates create stay
	// pending for the test to count.
	s := testServer(t, func(c *Config) { c.EnabledSchedulers = []string{structs.JobTypeSysBatch} })
	node := testNode(t, s, 4000, 4096)
	register(t, s, testJob("web", 3))
	job, err := s.State().JobByID(nil, "default", "web")
	if err != nil || job == nil {
		t.Fatalf("job: %v", err)
	}
	var allocs []*structs.Allocation
	for i := 0; i < 3; i++ {
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
	if res, err := pending.Wait(); err != nil || len(res.NodeAllocation[node.ID]) != 3 {
		t.Fatalf("placement: %+v, %v", res, err)
	}
	update := func(a *structs.Allocation, status string) {
		t.Helper()
		up := &structs.Allocation{ID: a.ID, NodeID: node.ID, ClientStatus: status}
		var r structs.GenericResponse
		if err := s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{up}}, &r); err != nil {
			t.Fatal(err)
		}
	}
	evals := func() map[string]int {
		t.Helper()
		list, err := s.State().EvalsByJob(nil, "default", "web")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, e := range list {
			out[e.TriggeredBy]++
		}
		return out
	}
	before := evals()

	update(allocs[0], structs.AllocClientStatusRunning)
	if got := evals(); len(got) != len(before) || got[structs.EvalTriggerRetryFailedAlloc] != 0 {
		t.Fatalf("running update created evaluations: %v -> %v", before, got)
	}

	update(allocs[1], structs.AllocClientStatusFailed)
	if got := evals()[structs.EvalTriggerRetryFailedAlloc]; got != 1 {
		t.Fatalf("failed update: %d reschedule evaluations, want 1", got)
	}
	update(allocs[1], structs.AllocClientStatusFailed) // already failed: nothing new
	if got := evals()[structs.EvalTriggerRetryFailedAlloc]; got != 1 {
		t.Fatalf("repeated failed update: %d reschedule evaluations, want 1", got)
	}

	// The servers mark the third unknown (its node missed heartbeats);
	// the client's next update is a reconnect.
	unknown := &structs.Allocation{ID: allocs[2].ID, NodeID: node.ID, ClientStatus: structs.AllocClientStatusUnknown}
	if _, _, err := s.raftApply(structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{unknown}}); err != nil {
		t.Fatal(err)
	}
	if got := evals()[structs.EvalTriggerReconnect]; got != 0 {
		t.Fatalf("reconnect evaluations before the client spoke: %d", got)
	}
	update(allocs[2], structs.AllocClientStatusRunning)
	if got := evals()[structs.EvalTriggerReconnect]; got != 1 {
		t.Fatalf("update of an unknown allocation: %d reconnect evaluations, want 1", got)
	}
}

// An allocation that fails after its disconnect window's follow-up
// evaluation was cancelled (its client came back) gets a reschedule
// evaluation of its own; one whose follow-up is still waiting does not
// (that follow-up handles it). The reconnect model test found the first
// (R4): the failed allocation was never replaced.
func TestUpdateAllocFailureAfterCancelledFollowupIsEvaluated(t *testing.T) {
	s := testServer(t, func(c *Config) { c.EnabledSchedulers = []string{structs.JobTypeSysBatch} })
	node := testNode(t, s, 4000, 4096)
	register(t, s, testJob("web", 2))
	job, err := s.State().JobByID(nil, "default", "web")
	if err != nil || job == nil {
		t.Fatalf("job: %v", err)
	}
	now := time.Now()
	cancelled := &structs.Evaluation{ID: uuid.NewString(), Namespace: "default", Priority: 50, Type: job.Type, JobID: "web",
		TriggeredBy: "max-disconnect-timeout", Status: structs.EvalStatusCancelled, CreateTime: now.UnixNano(), ModifyTime: now.UnixNano()}
	waiting := &structs.Evaluation{ID: uuid.NewString(), Namespace: "default", Priority: 50, Type: job.Type, JobID: "web",
		TriggeredBy: "max-disconnect-timeout", Status: structs.EvalStatusPending, WaitUntil: now.Add(time.Hour),
		CreateTime: now.UnixNano(), ModifyTime: now.UnixNano()}
	if _, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{cancelled, waiting}}); err != nil {
		t.Fatal(err)
	}
	var allocs []*structs.Allocation
	for i, followup := range []string{cancelled.ID, waiting.ID} {
		allocs = append(allocs, &structs.Allocation{ID: uuid.NewString(), Namespace: "default", JobID: "web", Job: job,
			TaskGroup: "web", Name: fmt.Sprintf("web.web[%d]", i), NodeID: node.ID, FollowupEvalID: followup,
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
			AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
				"t": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64}},
			}}})
	}
	pending, err := s.planQueue.Enqueue(&structs.Plan{Priority: 50, Job: job, NodeAllocation: map[string][]*structs.Allocation{node.ID: allocs}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := pending.Wait(); err != nil || len(res.NodeAllocation[node.ID]) != 2 {
		t.Fatalf("placement: %+v, %v", res, err)
	}
	retries := func() int {
		t.Helper()
		list, err := s.State().EvalsByJob(nil, "default", "web")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range list {
			if e.TriggeredBy == structs.EvalTriggerRetryFailedAlloc {
				n++
			}
		}
		return n
	}
	fail := func(a *structs.Allocation) {
		t.Helper()
		up := &structs.Allocation{ID: a.ID, NodeID: node.ID, ClientStatus: structs.AllocClientStatusFailed}
		var r structs.GenericResponse
		if err := s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{up}}, &r); err != nil {
			t.Fatal(err)
		}
	}
	fail(allocs[1])
	if got := retries(); got != 0 {
		t.Fatalf("failure with a waiting follow-up: %d reschedule evaluations, want 0", got)
	}
	fail(allocs[0])
	if got := retries(); got != 1 {
		t.Fatalf("failure after a cancelled follow-up: %d reschedule evaluations, want 1", got)
	}
}
