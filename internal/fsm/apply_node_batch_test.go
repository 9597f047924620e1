package fsm

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// One entry marks many nodes down and creates their evals; the evals reach
// the broker only after the nodes are down in state, and a node deleted
// since the leader built the entry does not fail the others.
func TestApply_NodeBatchStatus(t *testing.T) {
	sink := &recordingSink{}
	f := newFSM(t, sink)
	apply(t, f, entry(t, 1, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("n1")}))
	apply(t, f, entry(t, 2, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: testNode("n2")}))
	for i, id := range []string{"n1", "n2"} {
		apply(t, f, entry(t, uint64(3+i), structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{NodeID: id, Status: structs.NodeStatusReady}))
	}
	sink.reset()
	ev := &structs.NodeEvent{Message: "Node heartbeat missed", Subsystem: "Cluster"}
	apply(t, f, entry(t, 10, structs.NodeBatchUpdateStatusRequestType, &structs.NodeBatchUpdateStatusRequest{
		Updates: []*structs.NodeUpdateStatusRequest{
			{NodeID: "n1", Status: structs.NodeStatusDown, NodeEvent: ev, UpdatedAt: 7},
			{NodeID: "gone", Status: structs.NodeStatusDown, NodeEvent: ev, UpdatedAt: 7},
			{NodeID: "n2", Status: structs.NodeStatusDown, NodeEvent: ev, UpdatedAt: 7},
		},
		Evals: []*structs.Evaluation{testEval("e1", "web", structs.EvalStatusPending)},
	}))
	st := f.State()
	for _, id := range []string{"n1", "n2"} {
		n, _ := st.NodeByID(nil, id)
		if n.Status != structs.NodeStatusDown || n.LastMissedHeartbeatIndex != 10 || n.ModifyIndex != 10 {
			t.Errorf("%s: status %s missed %d modify %d, want down at 10", id, n.Status, n.LastMissedHeartbeatIndex, n.ModifyIndex)
		}
		if last := n.Events[len(n.Events)-1]; last.Message != "Node heartbeat missed" {
			t.Errorf("%s: last event %q", id, last.Message)
		}
	}
	if e, _ := st.EvalByID(nil, "e1"); e == nil || e.CreateIndex != 10 {
		t.Fatalf("eval = %+v, want stored at 10", e)
	}
	if len(sink.evals) != 1 || len(sink.capacity) != 0 {
		t.Fatalf("sink got %d evals, %d capacity calls; want 1, 0", len(sink.evals), len(sink.capacity))
	}
}
