package state

import (
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// The per-node pull channel closes only for changes the node's client acts
// on: never for its own status updates or for other nodes' allocations.
func TestNodePullWatch_Wakes(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(5, mockNode("n1")))
	must(t, s.UpsertNode(6, mockNode("n2")))
	job := storedJob(t, s, 10, mockJob("web"))

	watch := func() memdb.WatchSet {
		ws := memdb.NewWatchSet()
		ws.Add(s.NodePullWatch("n1").Ch)
		return ws
	}
	steps := []struct {
		name  string
		write func()
		wakes bool
	}{
		{"placement on n1", func() { must(t, s.UpsertAllocs(11, []*structs.Allocation{mockAlloc("a1", "n1", job)})) }, true},
		{"placement on n2", func() { must(t, s.UpsertAllocs(12, []*structs.Allocation{mockAlloc("b1", "n2", job)})) }, false},
		{"own status update", func() {
			must(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{{ID: "a1", NodeID: "n1", ClientStatus: structs.AllocClientStatusRunning}}))
		}, false},
		{"server stops the alloc", func() {
			must(t, s.UpsertPlanResults(14, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{{ID: "a1"}}}))
		}, true},
		{"other node's status update", func() {
			must(t, s.UpdateAllocsFromClient(15, []*structs.Allocation{{ID: "b1", NodeID: "n2", ClientStatus: structs.AllocClientStatusRunning}}))
		}, false},
		{"GC of the alloc", func() { must(t, s.DeleteEval(16, nil, []string{"a1"})) }, true},
		{"node re-registered as it was", func() { must(t, s.UpsertNode(17, mockNode("n1"))) }, false},
		{"node re-registered with a new secret", func() {
			n := mockNode("n1")
			n.SecretID = "new-secret"
			must(t, s.UpsertNode(18, n))
		}, true},
		{"node removed", func() { must(t, s.DeleteNode(19, []string{"n1"})) }, true},
		{"node registered", func() { must(t, s.UpsertNode(20, mockNode("n1"))) }, true},
	}
	for _, st := range steps {
		ws := watch()
		st.write()
		if st.wakes && !fires(ws) {
			t.Fatalf("%s: pull not woken", st.name)
		}
		if !st.wakes && !quiet(ws) {
			t.Fatalf("%s: pull woken", st.name)
		}
	}
}

// A pull's answered index is remembered until the node's next change, and
// never for a generation the node has already left.
func TestNodePullWatch_Remembers(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(5, mockNode("n1")))
	job := storedJob(t, s, 10, mockJob("web"))

	p := s.NodePullWatch("n1")
	if p.Known {
		t.Fatal("nothing answered yet")
	}
	s.NodePullAnswered("n1", p, 7, "secret")
	if p2 := s.NodePullWatch("n1"); !p2.Known || p2.Index != 7 || p2.SecretID != "secret" {
		t.Fatalf("after an answer: %+v", p2)
	}
	// A placement is a change; a client update is not.
	must(t, s.UpsertAllocs(11, []*structs.Allocation{mockAlloc("a1", "n1", job)}))
	p = s.NodePullWatch("n1")
	if p.Known {
		t.Fatal("a placement must forget the answer")
	}
	s.NodePullAnswered("n1", p, 11, "secret")
	must(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusRunning}}))
	if p2 := s.NodePullWatch("n1"); !p2.Known || p2.Index != 11 {
		t.Fatalf("a client update made the answer unknown: %+v", p2)
	}
	// An answer computed before a change is not remembered after it.
	p = s.NodePullWatch("n1")
	must(t, s.UpsertPlanResults(13, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{{ID: "a1"}}}))
	s.NodePullAnswered("n1", p, 11, "secret")
	if p2 := s.NodePullWatch("n1"); p2.Known {
		t.Fatalf("stale answer remembered: %+v", p2)
	}
}
