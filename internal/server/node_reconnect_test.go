package server

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/structs"
)

// A node that missed its heartbeats and comes back before any scheduler
// pass acted on its absence (its allocations are still running, not
// unknown, on the servers) has nothing stale to wait for: its next
// heartbeat makes it ready without a push. It used to stay initializing
// until one of its allocations changed, which a healthy client's need not
// ever do (the reconnect model test found it: R4_SEED=7).
func TestNodeBackBeforeAnyPassIsReadyWithoutPush(t *testing.T) {
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
	if got := heartbeat(structs.NodeStatusReady); got != structs.NodeStatusReady {
		t.Fatalf("status = %s, want ready: its allocation was never marked unknown", got)
	}
}

// A node back from disconnected whose allocation the servers marked
// unknown stays initializing, however often it heartbeats, until its client
// has pushed that allocation's state; pushes from before the outage do not
// count.
func TestNodeBackFromDisconnectWaitsForAllocPush(t *testing.T) {
	s := testServer(t, nil)
	a := testNode(t, s, 4000, 8192)
	job := testJob("web", 1)
	hour := time.Hour
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: &hour}
	evalDone(t, s, register(t, s, job).EvalID)
	fakeClients(t, s, "web")
	orig := liveAllocs(t, s, "web")[0]
	s.heartbeats.Clear(a.ID)
	if err := s.markNodesDown([]string{a.ID}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the allocation unknown", func() bool {
		cur, _ := s.State().AllocByID(nil, orig.ID)
		return cur.ClientStatus == structs.AllocClientStatusUnknown
	})
	heartbeat := func() string {
		t.Helper()
		var r structs.NodeUpdateResponse
		if err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: a.ID, SecretID: a.SecretID,
			Status: structs.NodeStatusReady}, &r); err != nil {
			t.Fatal(err)
		}
		n, _ := s.State().NodeByID(nil, a.ID)
		return n.Status
	}
	for i := 0; i < 3; i++ {
		if got := heartbeat(); got != structs.NodeStatusInit {
			t.Fatalf("heartbeat %d before the push: %s, want initializing", i+1, got)
		}
	}
	up := &structs.Allocation{ID: orig.ID, NodeID: a.ID, ClientStatus: structs.AllocClientStatusRunning}
	var r structs.GenericResponse
	if err := s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{up}}, &r); err != nil {
		t.Fatal(err)
	}
	if got := heartbeat(); got != structs.NodeStatusReady {
		t.Fatalf("after the push: %s, want ready", got)
	}
}
