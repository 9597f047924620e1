package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/scheduler/feasible"
	"github.com/drover-project/drover/internal/structs"
)

// explainCluster: 3 good nodes, one of each kind of filter, one down node.
func explainCluster(h *Harness) []*structs.Node {
	var all []*structs.Node
	add := func(n *structs.Node) {
		n.ComputeClass()
		h.State.UpsertNode(n)
		all = append(all, n)
	}
	for i := 0; i < 3; i++ {
		add(mockNode(fmt.Sprintf("good%d", i)))
	}
	win := mockNode("win")
	win.Attributes["kernel.name"] = "windows"
	add(win)
	nodrv := mockNode("nodrv")
	nodrv.Drivers = nil
	add(nodrv)
	small := mockNode("small")
	small.NodeResources.Memory.MemoryMB = 400
	add(small)
	down := mockNode("down")
	down.Status = structs.NodeStatusDown
	add(down)
	return all
}

func TestExplainCollectsFiltersAndScores(t *testing.T) {
	h := NewHarness()
	all := explainCluster(h)
	job := mockJob("web", 4)
	job.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}}
	h.State.UpsertJob(job)

	ex := feasible.NewExplain()
	s, err := NewScheduler("service", Config{Clock: func() time.Time { return testNow }, Explain: ex}, h.State, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Process(mockEval(job)); err != nil {
		t.Fatal(err)
	}
	got := ex.Result(all, job, h.Plans, false).TaskGroups["web"]
	if got == nil {
		t.Fatal("no explain for group web")
	}
	wantFiltered := map[string]int{"${attr.kernel.name} = linux": 1, "missing drivers": 1, "node not ready": 1}
	if fmt.Sprint(got.Filtered) != fmt.Sprint(wantFiltered) {
		t.Errorf("Filtered = %v, want %v", got.Filtered, wantFiltered)
	}
	if fmt.Sprint(got.Exhausted) != fmt.Sprint(map[string]int{"memory": 1}) {
		t.Errorf("Exhausted = %v", got.Exhausted)
	}
	if got.NodesEvaluated != 6 || got.NodesScored != 3 || len(got.Nodes) != 3 {
		t.Fatalf("evaluated %d scored %d rows %d, want 6/3/3", got.NodesEvaluated, got.NodesScored, len(got.Nodes))
	}
	placed := 0
	for i, n := range got.Nodes {
		if i > 0 && n.Final > got.Nodes[i-1].Final {
			t.Errorf("rows not sorted by final score: %v after %v", n.Final, got.Nodes[i-1].Final)
		}
		if _, ok := n.Scores["binpack"]; !ok || n.NodeName == "" {
			t.Errorf("row %+v lacks binpack score or name", n)
		}
		placed += n.Placed
	}
	if placed != 4 {
		t.Errorf("placed over rows = %d, want 4", placed)
	}
	// The explain did not change what was decided.
	if n := len(liveAllocs(h, "web")); n != 4 {
		t.Fatalf("placed %d allocs, want 4", n)
	}
}

// Rows are cut to the top 20 unless all are asked for.
func TestExplainTopNodes(t *testing.T) {
	h := NewHarness()
	var all []*structs.Node
	for i := 0; i < 30; i++ {
		n := mockNode(fmt.Sprintf("n%02d", i))
		h.State.UpsertNode(n)
		all = append(all, n)
	}
	job := mockJob("web", 30)
	job.Type = structs.JobTypeBatch // limit 2: a node is ranked once per select
	h.State.UpsertJob(job)
	ex := feasible.NewExplain()
	s, _ := NewScheduler("batch", Config{Clock: func() time.Time { return testNow }, Explain: ex}, h.State, h)
	if err := s.Process(mockEval(job)); err != nil {
		t.Fatal(err)
	}
	top := ex.Result(all, job, h.Plans, false).TaskGroups["web"]
	full := ex.Result(all, job, h.Plans, true).TaskGroups["web"]
	if top.NodesScored != 30 || len(top.Nodes) != structs.ExplainTopNodes || len(full.Nodes) != 30 {
		t.Fatalf("scored %d, top rows %d, all rows %d", top.NodesScored, len(top.Nodes), len(full.Nodes))
	}
	if top.Nodes[0].Final != full.Nodes[0].Final || top.Nodes[19].NodeID != full.Nodes[19].NodeID {
		t.Fatal("top rows are not the head of all rows")
	}
}
