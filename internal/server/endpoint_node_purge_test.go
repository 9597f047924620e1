package server

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Purging a node with running work: the node is gone, its heartbeat
// deadline too, and its allocations are marked lost and replaced on the
// other node. An unknown node is a 404 naming it.
func TestNodePurgeReplacesItsAllocations(t *testing.T) {
	s := testServer(t, nil)
	a := testNode(t, s, 4000, 4096)
	evalDone(t, s, register(t, s, testJob("web", 2)).EvalID)
	live := liveAllocs(t, s, "web")
	if len(live) != 2 {
		t.Fatalf("%d live allocs", len(live))
	}
	for _, al := range live {
		if al.NodeID != a.ID {
			t.Fatalf("alloc on %s, want %s", al.NodeID, a.ID)
		}
	}
	b := testNode(t, s, 4000, 4096)

	var reply structs.NodeUpdateResponse
	err := s.RPC("Node.Deregister", &structs.NodeDeregisterRequest{NodeIDs: []string{"12345678-abcd-efab-cdef-123456789abc"}}, &reply)
	if err == nil || !strings.Contains(err.Error(), `node "12345678-abcd-efab-cdef-123456789abc" not found`) {
		t.Fatalf("unknown node: %v", err)
	}
	if err := s.RPC("Node.Deregister", &structs.NodeDeregisterRequest{NodeIDs: []string{a.ID}}, &reply); err != nil {
		t.Fatal(err)
	}
	if len(reply.EvalIDs) != 1 || reply.NodeModifyIndex == 0 || reply.EvalCreateIndex <= reply.NodeModifyIndex {
		t.Fatalf("reply %+v", reply)
	}
	if n, _ := s.State().NodeByID(nil, a.ID); n != nil {
		t.Fatal("purged node still stored")
	}
	if s.heartbeats.Armed(a.ID) {
		t.Fatal("purged node keeps a heartbeat deadline")
	}
	evalDone(t, s, reply.EvalIDs[0])
	waitFor(t, 10*time.Second, "replacements on the other node", func() bool {
		live := liveAllocs(t, s, "web")
		if len(live) != 2 {
			return false
		}
		for _, al := range live {
			if al.NodeID != b.ID {
				return false
			}
		}
		return true
	})
	for _, al := range allocsOf(t, s, "web") {
		if al.NodeID == a.ID && al.ClientStatus != structs.AllocClientStatusLost {
			t.Fatalf("alloc on the purged node is %s/%s, want lost", al.DesiredStatus, al.ClientStatus)
		}
	}
	// The purged node's client is told its node is unknown, and registers
	// again.
	err = s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: a.ID, SecretID: a.SecretID, Status: structs.NodeStatusReady}, &reply)
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("heartbeat of a purged node: %v", err)
	}
}
