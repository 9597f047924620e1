package server

import (
	"testing"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/structs"
)

// A node that missed its heartbeats and comes back with live allocations
// stays initializing until its client has pushed their state; only then
// does its next heartbeat make it ready again (otherwise the scheduler
// would act on allocation statuses from before the outage). Client updates
// before the outage must not count, however many there were.
func TestNodeBackFromMissedHeartbeatWaitsForAllocPush(t *testing.T) {
	// No worker takes service evaluations: the node-down evaluation would
	// otherwise mark the allocation lost (no longer live) at a moment of
	// its choosing. The allocation is placed by a plan submitted here.
	s := testServer(t, func(c *Config) { c.EnabledSchedulers = []string{structs.JobTypeSysBatch} })
	node := testNode(t, s, 4000, 4096)
	register(t, s, testJob("web", 1))
	job, err := s.State().JobByID(nil, "default", "web")
	if err != nil || job == nil {
		t.Fatalf("job: %v", err)
	}
	alloc := &structs.Allocation{ID: uuid.NewString(), Namespace: "default", JobID: "web", Job: job,
		TaskGroup: "web", Name: "web.web[0]", NodeID: node.ID, DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus: structs.AllocClientStatusPending,
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"t": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64}},
		}}}
	pending, err := s.planQueue.Enqueue(&structs.Plan{Priority: 50, Job: job,
		NodeAllocation: map[string][]*structs.Allocation{node.ID: {alloc}}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := pending.Wait(); err != nil || len(res.NodeAllocation[node.ID]) != 1 {
		t.Fatalf("placement: %+v, %v", res, err)
	}
	push := func() {
		t.Helper()
		up := &structs.Allocation{ID: alloc.ID, NodeID: node.ID, ClientStatus: structs.AllocClientStatusRunning}
		var r structs.GenericResponse
		if err := s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{up}}, &r); err != nil {
			t.Fatal(err)
		}
	}
	heartbeat := func(status string) string {
		t.Helper()
		var r structs.NodeUpdateResponse
		if err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: node.ID, SecretID: node.SecretID,
			Status: status}, &r); err != nil {
			t.Fatal(err)
		}
		n, _ := s.State().NodeByID(nil, node.ID)
		return n.Status
	}
	push()
	push()

	// The outage: the node is marked down, then heartbeats again.
	if got := heartbeat(structs.NodeStatusDown); got != structs.NodeStatusDown {
		t.Fatalf("status = %s, want down", got)
	}
	if got := heartbeat(structs.NodeStatusInit); got != structs.NodeStatusInit {
		t.Fatalf("status = %s, want init", got)
	}
	if got := heartbeat(structs.NodeStatusReady); got != structs.NodeStatusInit {
		t.Fatalf("ready before pushing its allocs: status = %s, want init", got)
	}
	push()
	if got := heartbeat(structs.NodeStatusReady); got != structs.NodeStatusReady {
		t.Fatalf("after the push: status = %s, want ready", got)
	}
}
