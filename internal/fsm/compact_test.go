package fsm

import (
	"bytes"
	"reflect"
	"testing"
	"unsafe"

	"github.com/drover-project/drover/internal/structs"
)

// Placements applied from the log, in separate entries and after a snapshot
// restore, all point at the one stored job object of their version; decoded
// metrics keep what the API shows and drop only empty maps.
func TestPlanAllocsShareJobAndDropEmptyMaps(t *testing.T) {
	f := newFSM(t, nil)
	readyNodeAndJob(t, f, nil)
	stored, _ := f.State().JobByID(nil, "default", "web")
	planJob := *stored // the plan carries the job as the scheduler read it
	place := func(id string) *structs.Allocation {
		return &structs.Allocation{ID: id, Namespace: "default", NodeID: "n1", JobID: "web", TaskGroup: "web",
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
			AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{"t": {}},
				TaskLifecycles: map[string]*structs.TaskLifecycle{}},
			Metrics: &structs.AllocMetric{NodesEvaluated: 3, NodesAvailable: map[string]int{"dc1": 3},
				ClassFiltered: map[string]int{}, DimensionExhausted: map[string]int{"memory": 1},
				ScoreMetaData: []*structs.NodeScoreMeta{{NodeID: "n1", Scores: map[string]float64{"binpack": 0.5}, NormScore: 0.5}}}}
	}
	apply(t, f, entry(t, 3, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: &planJob,
		Alloc: []*structs.Allocation{place("a1"), place("a2")}}))
	if a1, _ := f.State().AllocByID(nil, "a1"); a1.Job != stored {
		t.Fatal("a1 does not point at the stored job it was planned on")
	}
	current, _ := f.State().JobByID(nil, "default", "web")
	planJob2 := *current
	apply(t, f, entry(t, 4, structs.ApplyPlanResultsBatchRequestType, &structs.ApplyPlanResultsBatchRequest{
		Plans: []*structs.ApplyPlanResultsRequest{{Job: &planJob2, Alloc: []*structs.Allocation{place("a3")}}}}))

	// a1 and a2 share the job object the plan was made from (stored then;
	// the plan's commit stored a new object for the job's status); a3, of a
	// plan made on the new one, points at that.
	check := func(f *FSM, when string) {
		t.Helper()
		st := f.State()
		a1, _ := st.AllocByID(nil, "a1")
		a2, _ := st.AllocByID(nil, "a2")
		a3, _ := st.AllocByID(nil, "a3")
		if a1.Job == nil || a1.Job != a2.Job {
			t.Fatalf("%s: a1 and a2 hold separate job copies", when)
		}
		if job, _ := st.JobByID(nil, "default", "web"); a3.Job != job {
			t.Fatalf("%s: a3 does not point at the stored job", when)
		}
	}
	check(f, "applied")

	a1, _ := f.State().AllocByID(nil, "a1")
	a2, _ := f.State().AllocByID(nil, "a2")
	m := a1.Metrics
	if m.ClassFiltered != nil || a1.AllocatedResources.TaskLifecycles != nil {
		t.Errorf("empty maps kept: %+v %+v", m.ClassFiltered, a1.AllocatedResources.TaskLifecycles)
	}
	if m.NodesEvaluated != 3 || m.NodesAvailable["dc1"] != 3 || m.DimensionExhausted["memory"] != 1 ||
		len(m.ScoreMetaData) != 1 || m.ScoreMetaData[0].Scores["binpack"] != 0.5 || a1.AllocatedResources.Tasks["t"] == nil {
		t.Errorf("metrics lost what the API shows: %+v", m)
	}
	a1.Metrics.NodesAvailable["probe"] = 1 // the maps are shared within the entry
	a1.Metrics.ScoreMetaData[0].Scores["probe"] = 1
	if a2.Metrics.NodesAvailable["probe"] != 1 || a2.Metrics.ScoreMetaData[0].Scores["probe"] != 1 {
		t.Error("identical NodesAvailable / score maps of one entry are not shared")
	}
	delete(a1.Metrics.NodesAvailable, "probe")
	delete(a1.Metrics.ScoreMetaData[0].Scores, "probe")

	restored := snapshotRestored(t, f)
	check(restored, "restored")

	// The restored allocations answer the same and are compacted as the
	// applied ones were: equal grants and node IDs are shared.
	for _, id := range []string{"a1", "a2", "a3"} {
		live, _ := f.State().AllocByID(nil, id)
		back, _ := restored.State().AllocByID(nil, id)
		if !reflect.DeepEqual(live, back) {
			t.Errorf("%s restored differs:\n%+v\n%+v", id, back, live)
		}
	}
	r1, _ := restored.State().AllocByID(nil, "a1")
	r3, _ := restored.State().AllocByID(nil, "a3")
	if r1.AllocatedResources != r3.AllocatedResources || unsafe.StringData(r1.NodeID) != unsafe.StringData(r3.NodeID) {
		t.Error("restored allocations hold private copies of equal grants and node IDs")
	}
}

// Only equal score maps are shared.
func TestCompactorSharesOnlyEqualScores(t *testing.T) {
	c := compactor{strs: map[string]string{}, scores: map[string]map[string]float64{}}
	a := c.sharedScores(map[string]float64{"binpack": 0.5, "job-anti-affinity": -1})
	b := c.sharedScores(map[string]float64{"job-anti-affinity": -1, "binpack": 0.5})
	d := c.sharedScores(map[string]float64{"binpack": 0.6, "job-anti-affinity": -1})
	e := c.sharedScores(map[string]float64{"binpack": 0.5})
	a["probe"] = 1
	if b["probe"] != 1 {
		t.Error("equal score maps not shared")
	}
	if d["probe"] == 1 || e["probe"] == 1 || d["binpack"] != 0.6 || len(e) != 1 {
		t.Errorf("different score maps shared: %v %v", d, e)
	}
	if c.sharedScores(map[string]float64{}) != nil {
		t.Error("empty score map kept")
	}
}

// Equal grants of one entry become one object; a grant that differs in
// anything (a port, a task's memory) keeps its own, with its values.
func TestCompactorSharesOnlyEqualResources(t *testing.T) {
	grant := func(mem int64, port int) *structs.AllocatedResources {
		r := &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"web": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: mem}}},
			TaskLifecycles: map[string]*structs.TaskLifecycle{}, Shared: structs.AllocatedSharedResources{DiskMB: 150}}
		if port > 0 {
			r.Shared.Ports = structs.AllocatedPorts{{Label: "http", Value: port, HostIP: "10.0.0.1"}}
		}
		return r
	}
	allocs := []*structs.Allocation{
		{ID: "a1", AllocatedResources: grant(256, 0)},
		{ID: "a2", AllocatedResources: grant(256, 0)},
		{ID: "a3", AllocatedResources: grant(512, 0)},
		{ID: "a4", AllocatedResources: grant(256, 20001)},
		{ID: "a5", AllocatedResources: grant(256, 20002)},
		{ID: "a6", AllocatedResources: grant(256, 0)},
	}
	want := make([]*structs.AllocatedResources, len(allocs))
	for i, a := range allocs {
		want[i] = grant(a.AllocatedResources.Tasks["web"].Memory.MemoryMB, 0)
		want[i].Shared.Ports = a.AllocatedResources.Shared.Ports
		want[i].TaskLifecycles = nil
	}
	compactPlanAllocs([]*structs.ApplyPlanResultsRequest{{Alloc: allocs}}, nil)
	for i, a := range allocs {
		if !reflect.DeepEqual(a.AllocatedResources, want[i]) {
			t.Errorf("%s: grant changed: %+v, want %+v", a.ID, a.AllocatedResources, want[i])
		}
	}
	r := func(i int) *structs.AllocatedResources { return allocs[i].AllocatedResources }
	if r(0) != r(1) || r(0) != r(5) {
		t.Error("equal grants are not shared")
	}
	if r(0) == r(2) || r(3) == r(4) || r(0) == r(3) {
		t.Error("different grants are shared")
	}
}

// A client update's repeated strings are shared and keep their values.
func TestCompactClientAllocsKeepsValues(t *testing.T) {
	update := func(id string) *structs.Allocation {
		return &structs.Allocation{ID: id, ClientStatus: string([]byte("running")),
			TaskStates: map[string]*structs.TaskState{"web": {State: string([]byte("running")),
				Events: []*structs.TaskEvent{{Type: string([]byte("Started")), DisplayMessage: "Task started by client"}}}}}
	}
	allocs := []*structs.Allocation{update("a1"), nil, update("a2")}
	compactClientAllocs(allocs)
	a1, a2 := allocs[0], allocs[2]
	if a1.ClientStatus != "running" || a2.TaskStates["web"].State != "running" ||
		a2.TaskStates["web"].Events[0].Type != "Started" || a2.TaskStates["web"].Events[0].DisplayMessage != "Task started by client" {
		t.Fatalf("values changed: %+v %+v", a1, a2.TaskStates["web"])
	}
	if unsafe.StringData(a1.ClientStatus) != unsafe.StringData(a2.TaskStates["web"].State) ||
		unsafe.StringData(a1.TaskStates["web"].Events[0].Type) != unsafe.StringData(a2.TaskStates["web"].Events[0].Type) {
		t.Error("repeated strings are not shared")
	}
}

// A node's score recorded by several placements of an entry is kept once;
// any difference (node, scores, normalized score) keeps its own.
func TestCompactorSharesEqualScoreMeta(t *testing.T) {
	meta := func(node string, binpack, norm float64) *structs.NodeScoreMeta {
		return &structs.NodeScoreMeta{NodeID: node, Scores: map[string]float64{"binpack": binpack}, NormScore: norm}
	}
	metrics := func(ms ...*structs.NodeScoreMeta) *structs.AllocMetric {
		return &structs.AllocMetric{ScoreMetaData: ms}
	}
	allocs := []*structs.Allocation{
		{ID: "a1", Metrics: metrics(meta("n1", 0.5, 0.5), meta("n2", 0.4, 0.4))},
		{ID: "a2", Metrics: metrics(meta("n2", 0.4, 0.4), meta("n3", 0.4, 0.4))},
		{ID: "a3", Metrics: metrics(meta("n2", 0.4, 0.3), meta("n2", 0.3, 0.4))},
	}
	compactPlanAllocs([]*structs.ApplyPlanResultsRequest{{Alloc: allocs}}, nil)
	sm := func(a, i int) *structs.NodeScoreMeta { return allocs[a].Metrics.ScoreMetaData[i] }
	if sm(0, 1) != sm(1, 0) {
		t.Error("equal scores of n2 are not shared")
	}
	if sm(1, 0) == sm(1, 1) || sm(1, 0) == sm(2, 0) || sm(1, 0) == sm(2, 1) || sm(2, 0) == sm(2, 1) {
		t.Error("different scores are shared")
	}
	if got := sm(2, 0); got.NodeID != "n2" || got.Scores["binpack"] != 0.4 || got.NormScore != 0.3 {
		t.Errorf("score changed: %+v", got)
	}
	if got := sm(1, 1); got.NodeID != "n3" || got.Scores["binpack"] != 0.4 || got.NormScore != 0.4 {
		t.Errorf("score changed: %+v", got)
	}
}

// snapshotRestored persists f's snapshot and restores it into a new FSM.
func snapshotRestored(t *testing.T, f *FSM) *FSM {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &bufSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	restored := newFSM(t, nil)
	if err := restored.Restore(nopCloser{bytes.NewReader(sink.Bytes())}); err != nil {
		t.Fatal(err)
	}
	return restored
}
