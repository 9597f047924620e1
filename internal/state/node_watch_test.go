package state

import (
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// The per-node pull channel closes only for changes the node's client acts
// on: never for its own status updates or for other nodes' allocations.
func TestNodeAllocsWatchCh(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(5, mockNode("n1")))
	must(t, s.UpsertNode(6, mockNode("n2")))
	job := storedJob(t, s, 10, mockJob("web"))

	watch := func() memdb.WatchSet {
		ws := memdb.NewWatchSet()
		ws.Add(s.NodeAllocsWatchCh("n1"))
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
		{"node removed", func() { must(t, s.DeleteNode(17, []string{"n1"})) }, true},
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

	snap, err := s.Snapshot()
	must(t, err)
	if snap.NodeAllocsWatchCh("n1") != nil {
		t.Fatal("a snapshot never changes: want a nil channel")
	}
}
