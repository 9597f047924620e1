package fsm

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// What the FSM stores of plan and client update entries (compacted,
// node strings shared with the stored nodes) equals, table by table, what
// the state store writes of the same decoded requests uncompacted;
// garbage collections between the entries change nothing. (The entries
// have no empty maps: the compaction drops those, see
// TestPlanAllocsShareJobAndDropEmptyMaps.)
func TestApplyStoresWhatStateWrites(t *testing.T) {
	f := newFSM(t, nil)
	ref, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	decoded := func(l *raft.Log, out any) {
		t.Helper()
		if err := structs.Decode(l.Data[1:], out); err != nil {
			t.Fatal(err)
		}
	}
	var nodes []string
	for i := range 6 {
		n := testNode(fmt.Sprintf("%08d-0000-0000-0000-000000000000", i))
		n.Name = fmt.Sprintf("sim-%d", i)
		nodes = append(nodes, n.ID)
		l := entry(t, uint64(1+i), structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: n})
		apply(t, f, l)
		var req structs.NodeRegisterRequest
		decoded(l, &req)
		must(t, ref.UpsertNode(l.Index, req.Node))
	}
	l := entry(t, 10, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: testJob("web")})
	apply(t, f, l)
	var jreq structs.JobRegisterRequest
	decoded(l, &jreq)
	must(t, ref.UpsertJob(l.Index, nil, jreq.Job))
	job, _ := f.State().JobByID(nil, "default", "web")

	index := uint64(11)
	for p := range 4 {
		req := &structs.ApplyPlanResultsRequest{Job: job, EvalID: fmt.Sprintf("eval-%d", p)}
		for j := range 5 {
			k := p*5 + j
			node := k % len(nodes)
			var scored []*structs.NodeScoreMeta
			for s := range 3 {
				scored = append(scored, &structs.NodeScoreMeta{NodeID: nodes[(node+s)%len(nodes)],
					Scores: map[string]float64{"binpack": float64(s) / 4}, NormScore: float64(s) / 4})
			}
			scored = append(scored, &structs.NodeScoreMeta{NodeID: "unknown-node", Scores: map[string]float64{"binpack": 0.1}})
			req.Alloc = append(req.Alloc, &structs.Allocation{ID: fmt.Sprintf("alloc-%03d", k), Namespace: "default",
				EvalID: req.EvalID, NodeID: nodes[node], NodeName: fmt.Sprintf("sim-%d", node), JobID: "web", TaskGroup: "web",
				Name: structs.AllocName("web", "web", uint(k)), DesiredStatus: structs.AllocDesiredStatusRun,
				ClientStatus: structs.AllocClientStatusPending,
				AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{"t": {
					Cpu: structs.AllocatedCpuResources{CpuShares: 100}}}},
				Metrics: &structs.AllocMetric{NodesEvaluated: 6, NodesAvailable: map[string]int{"dc1": 6},
					ScoreMetaData: scored}})
		}
		l := entry(t, index, structs.ApplyPlanResultsRequestType, req)
		apply(t, f, l)
		var dreq structs.ApplyPlanResultsRequest
		decoded(l, &dreq)
		must(t, ref.UpsertPlanResults(l.Index, &dreq))
		index++
		runtime.GC()

		up := &structs.AllocUpdateRequest{}
		for j := range 5 {
			up.Alloc = append(up.Alloc, &structs.Allocation{ID: fmt.Sprintf("alloc-%03d", p*5+j), NodeID: nodes[(p*5+j)%len(nodes)],
				ClientStatus: structs.AllocClientStatusRunning, TaskStates: map[string]*structs.TaskState{"t": {
					State: structs.TaskStateRunning, StartedAt: time.Unix(int64(p), 0).UTC()}}})
		}
		l = entry(t, index, structs.AllocClientUpdateRequestType, up)
		apply(t, f, l)
		var dup structs.AllocUpdateRequest
		decoded(l, &dup)
		must(t, ref.UpdateAllocsFromClient(l.Index, dup.Alloc))
		index++
	}
	got, want := dump(t, f.State()), dump(t, ref)
	if len(got["allocs"]) != 20 {
		t.Fatalf("%d allocs stored", len(got["allocs"]))
	}
	for table := range want {
		if !reflect.DeepEqual(got[table], want[table]) {
			t.Errorf("table %s differs from the state's own write", table)
		}
	}
	for _, id := range []string{"alloc-000", "alloc-019"} {
		a, _ := f.State().AllocByID(nil, id)
		b, _ := ref.AllocByID(nil, id)
		a2, b2 := *a, *b
		a2.Job, b2.Job = nil, nil
		if !reflect.DeepEqual(a2.Metrics.ScoreMetaData, b2.Metrics.ScoreMetaData) || a.NodeID != b.NodeID || a.NodeName != b.NodeName {
			t.Errorf("%s differs:\n%+v\n%+v", id, a2, b2)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
