package feasible

import (
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// Job anti-affinity penalises a node by the allocations of the same job
// and group proposed there.
func TestJobAntiAffinity_CountsSameGroup(t *testing.T) {
	job := &structs.Job{ID: "j", Namespace: "default"}
	tg := &structs.TaskGroup{Name: "g", Count: 4}
	proposed := []*structs.Allocation{
		jobAlloc("a1", "n1"), jobAlloc("a2", "n1"),
		{ID: "x", Namespace: "default", JobID: "j", TaskGroup: "other"},
		{ID: "y", Namespace: "other", JobID: "j", TaskGroup: "g"},
		{ID: "z", Namespace: "default", JobID: "k", TaskGroup: "g"},
	}
	opt := &RankedNode{Node: &structs.Node{ID: "n1"}, Proposed: proposed}
	it := &JobAntiAffinityIterator{source: &staticRank{opts: []*RankedNode{opt}}, job: job, tg: tg}
	got := it.Next().ScoreMap()["job-anti-affinity"]
	if want := -3.0 / 4; got != want {
		t.Errorf("score %v, want %v (two collisions)", got, want)
	}
}

// The count read from the node's memoised groups plus the plan's
// placements equals a count over the proposed allocations, through
// placements, stops, in-place updates and preemption; the memoised count
// is used only while the proposed allocations are exactly the node's
// followed by the plan's placements.
func TestJobAntiAffinity_MemoisedCountFollowsPlan(t *testing.T) {
	job := &structs.Job{ID: "j", Namespace: "default", Priority: 50}
	tg := &structs.TaskGroup{Name: "g", Count: 10,
		Tasks: []*structs.Task{{Name: "t", Resources: &structs.Resources{CPU: 100, MemoryMB: 100}}}}
	group := func(id, ns, jobID, tgName string) *structs.Allocation {
		a := sizedAlloc(id, "n1", 100, 100, structs.AllocClientStatusRunning)
		a.Namespace, a.JobID, a.TaskGroup = ns, jobID, tgName
		return a
	}
	node := sizedNode("n1", 8000, 8000, 0)
	st := newTestState(node)
	st.allocs = []*structs.Allocation{
		group("e1", "default", "j", "g"), group("e2", "default", "j", "g"), group("e3", "default", "j", "g"),
		group("x1", "default", "j", "other"), group("x2", "other", "j", "g"), group("x3", "default", "k", "g"),
	}
	plan := &structs.Plan{NodeAllocation: map[string][]*structs.Allocation{}, NodeUpdate: map[string][]*structs.Allocation{},
		NodePreemptions: map[string][]*structs.Allocation{}}
	ctx := NewContext(st, plan, nil, 1, 1)
	b := &BinPackIterator{ctx: ctx, tg: tg}
	anti := &JobAntiAffinityIterator{job: job, tg: tg}

	check := func(step string, memoised bool) {
		t.Helper()
		opt := &RankedNode{Node: node}
		if !b.fit(opt) {
			t.Fatalf("%s: no fit", step)
		}
		if got := opt.live != nil; got != memoised {
			t.Fatalf("%s: memoised count used = %v, want %v", step, got, memoised)
		}
		want := 0
		for _, a := range opt.Proposed {
			if a.Namespace == "default" && a.JobID == "j" && a.TaskGroup == "g" {
				want++
			}
		}
		anti.source = &staticRank{opts: []*RankedNode{opt}}
		got := anti.Next().ScoreMap()["job-anti-affinity"]
		if exp := -float64(want+1) / 10; want > 0 && got != exp || want == 0 && got != 0 {
			t.Fatalf("%s: score %v for %d collisions", step, got, want)
		}
	}
	check("state only", true)
	plan.AppendAlloc(group("p1", "default", "j", "g"))
	plan.AppendAlloc(group("p2", "default", "k", "g"))
	check("placements", true)
	plan.AppendStoppedAlloc(st.allocs[0], "stop", "", "")
	check("a stop", false)
	plan.PopUpdate(st.allocs[0])
	check("stop taken back", true)
	inPlace := group("e2", "default", "j", "g") // same ID: an in-place update
	plan.AppendAlloc(inPlace)
	check("in-place update", false)
}
