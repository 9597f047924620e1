package server

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// A node that missed its heartbeats and comes back with live allocations
// stays initializing until its client has pushed their state; only then
// does its next heartbeat make it ready again (otherwise the scheduler
// would act on allocation statuses from before the outage). Client updates
// before the outage must not count, however many there were.
func TestNodeBackFromMissedHeartbeatWaitsForAllocPush(t *testing.T) {
	s := testServer(t, nil)
	node := testNode(t, s, 4000, 4096)
	register(t, s, testJob("web", 1))
	var alloc *structs.Allocation
	waitFor(t, 5*time.Second, "placement", func() bool {
		live, _ := s.State().AllocsByNodeTerminal(nil, node.ID, false)
		if len(live) == 1 {
			alloc = live[0]
		}
		return alloc != nil
	})
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
