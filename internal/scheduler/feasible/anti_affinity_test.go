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
