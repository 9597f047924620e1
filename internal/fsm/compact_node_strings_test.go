package fsm

import (
	"bytes"
	"runtime"
	"testing"
	"unsafe"

	"github.com/drover-project/drover/internal/structs"
)

// Placements of separate entries, with garbage collections in between,
// hold their node's stored ID and name strings, as do the scored nodes
// of their metrics; after a restore too. A node the store does not know
// keeps its values.
func TestPlanAllocsShareStoredNodeStrings(t *testing.T) {
	f := newFSM(t, nil)
	readyNodeAndJob(t, f, nil)
	n2 := testNode("n2")
	n2.Name = "node-two"
	apply(t, f, entry(t, 3, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: n2}))
	stored, _ := f.State().JobByID(nil, "default", "web")
	place := func(id, node, name string) *structs.Allocation {
		return &structs.Allocation{ID: id, Namespace: "default", NodeID: node, NodeName: name, JobID: "web", TaskGroup: "web",
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
			Metrics: &structs.AllocMetric{ScoreMetaData: []*structs.NodeScoreMeta{
				{NodeID: "n1", Scores: map[string]float64{"binpack": 0.5}, NormScore: 0.5},
				{NodeID: "n2", Scores: map[string]float64{"binpack": 0.4}, NormScore: 0.4},
				{NodeID: "gone", Scores: map[string]float64{"binpack": 0.3}, NormScore: 0.3},
			}}}
	}
	for i, a := range []*structs.Allocation{place("a1", "n1", "n1"), place("a2", "n2", "node-two"),
		place("a3", "n1", "n1"), place("a4", "gone", "gone-name"), place("a5", "n2", "renamed")} {
		job := *stored
		apply(t, f, entry(t, uint64(4+i), structs.ApplyPlanResultsRequestType,
			&structs.ApplyPlanResultsRequest{Job: &job, Alloc: []*structs.Allocation{a}}))
		runtime.GC()
		runtime.GC()
	}

	check := func(f *FSM, when string) {
		t.Helper()
		st := f.State()
		node := func(id string) *structs.Node { n, _ := st.NodeByID(nil, id); return n }
		alloc := func(id string) *structs.Allocation { a, _ := st.AllocByID(nil, id); return a }
		same := func(what, a, b string) {
			t.Helper()
			if a != b {
				t.Fatalf("%s: %s: %q != %q", when, what, a, b)
			}
			if unsafe.StringData(a) != unsafe.StringData(b) {
				t.Errorf("%s: %s: %q is not shared", when, what, a)
			}
		}
		n1, n2 := node("n1"), node("n2")
		for _, id := range []string{"a1", "a3"} {
			same(id+" node ID", alloc(id).NodeID, n1.ID)
			same(id+" node name", alloc(id).NodeName, n1.Name)
		}
		same("a2 node ID", alloc("a2").NodeID, n2.ID)
		same("a2 node name", alloc("a2").NodeName, n2.Name)
		same("a5 node ID", alloc("a5").NodeID, n2.ID)
		if got := alloc("a5").NodeName; got != "renamed" {
			t.Errorf("%s: a5's name changed to %q", when, got)
		}
		if a4 := alloc("a4"); a4.NodeID != "gone" || a4.NodeName != "gone-name" {
			t.Errorf("%s: unknown node's strings changed: %q %q", when, a4.NodeID, a4.NodeName)
		}
		for _, id := range []string{"a1", "a2", "a3", "a4", "a5"} {
			sm := alloc(id).Metrics.ScoreMetaData
			same(id+" scored n1", sm[0].NodeID, n1.ID)
			same(id+" scored n2", sm[1].NodeID, n2.ID)
			if sm[2].NodeID != "gone" {
				t.Errorf("%s: %s: scored unknown node changed to %q", when, id, sm[2].NodeID)
			}
		}
	}
	check(f, "applied")
	check(snapshotRestored(t, f), "restored")
}

// A re-registered node keeps the ID and name strings of its stored
// version, which its allocations share.
func TestNodeReregisterKeepsStoredStrings(t *testing.T) {
	f := newFSM(t, nil)
	readyNodeAndJob(t, f, nil)
	first, _ := f.State().NodeByID(nil, "n1")
	runtime.GC()
	again := testNode(string([]byte("n1")))
	again.Attributes["kernel.version"] = "6.1"
	apply(t, f, entry(t, 3, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: again}))
	n, _ := f.State().NodeByID(nil, "n1")
	if n == first || n.Attributes["kernel.version"] != "6.1" {
		t.Fatal("node not re-registered")
	}
	if unsafe.StringData(n.ID) != unsafe.StringData(first.ID) || unsafe.StringData(n.Name) != unsafe.StringData(first.Name) {
		t.Error("re-registered node holds new copies of its ID and name")
	}
	renamed := testNode("n1")
	renamed.Name = "other"
	apply(t, f, entry(t, 4, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: renamed}))
	if n, _ := f.State().NodeByID(nil, "n1"); n.Name != "other" || unsafe.StringData(n.ID) != unsafe.StringData(first.ID) {
		t.Errorf("renamed node: name %q, ID shared %v", n.Name, unsafe.StringData(n.ID) == unsafe.StringData(first.ID))
	}
}

// The node strings the FSM remembers across entries follow the node: a
// renamed node's placements share its new name, and a deregistered
// node is forgotten.
func TestKnownNodeStringsFollowTheNode(t *testing.T) {
	f := newFSM(t, nil)
	readyNodeAndJob(t, f, nil)
	job, _ := f.State().JobByID(nil, "default", "web")
	index := uint64(3)
	place := func(id, name string) {
		t.Helper()
		j := *job
		apply(t, f, entry(t, index, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: &j,
			Alloc: []*structs.Allocation{{ID: id, Namespace: "default", NodeID: "n1", NodeName: name, JobID: "web",
				TaskGroup: "web", DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending}}}))
		index++
	}
	shares := func(id string) {
		t.Helper()
		a, _ := f.State().AllocByID(nil, id)
		n, _ := f.State().NodeByID(nil, "n1")
		if a.NodeName != n.Name || unsafe.StringData(a.NodeName) != unsafe.StringData(n.Name) ||
			unsafe.StringData(a.NodeID) != unsafe.StringData(n.ID) {
			t.Errorf("%s: node strings %q %q not the stored node's %q %q", id, a.NodeID, a.NodeName, n.ID, n.Name)
		}
	}
	place("a1", "n1")
	shares("a1")
	if _, ok := f.nodeStrs["n1"]; !ok {
		t.Fatal("n1 not remembered")
	}
	renamed := testNode("n1")
	renamed.Name = "renamed"
	apply(t, f, entry(t, index, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: renamed}))
	index++
	runtime.GC() // unique forgets the new name: only the stored node holds it
	place("a2", "renamed")
	shares("a2")
	apply(t, f, entry(t, index, structs.NodeDeregisterRequestType, &structs.NodeDeregisterRequest{NodeIDs: []string{"n1"}}))
	index++
	if _, ok := f.nodeStrs["n1"]; ok {
		t.Error("deregistered node still remembered")
	}
	f.nodeStrs["n1"] = nodeRef{id: "n1", name: "stale"}
	if err := f.Restore(nopCloser{bytes.NewReader(persisted(t, f))}); err != nil {
		t.Fatal(err)
	}
	if len(f.nodeStrs) != 0 {
		t.Error("node strings survive a restore")
	}
}

// persisted is f's snapshot, persisted.
func persisted(t *testing.T, f *FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &bufSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	return sink.Bytes()
}
