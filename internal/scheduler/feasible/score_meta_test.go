package feasible

import (
	"fmt"
	"sort"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

func TestScoreMetaKeepsTopFive(t *testing.T) {
	ctx := NewContext(newTestState(), &structs.Plan{}, nil, 1, 1)
	var opts []*RankedNode
	// Final scores 0.1 .. 0.8 in a scrambled order, two rankers each.
	for _, i := range []int{3, 7, 1, 8, 5, 2, 6, 4} {
		o := &RankedNode{Node: &structs.Node{ID: fmt.Sprintf("n%d", i)}}
		o.addScore("binpack", float64(i)/10)
		o.addScore("node-affinity", float64(i)/10)
		opts = append(opts, o)
	}
	norm := &NormalizeIterator{ctx: ctx, source: &staticRank{opts: opts}}
	for norm.Next() != nil {
	}
	meta := ctx.Metrics().ScoreMetaData
	var ids []string
	for _, m := range meta {
		ids = append(ids, m.NodeID)
		if len(m.Scores) != 2 || m.Scores["binpack"] != m.NormScore {
			t.Errorf("%s: scores %v norm %v", m.NodeID, m.Scores, m.NormScore)
		}
	}
	sort.Strings(ids)
	if fmt.Sprint(ids) != "[n4 n5 n6 n7 n8]" {
		t.Fatalf("kept %v, want the five best", ids)
	}
}

// Score maps are complete whenever the metrics are read, also when they
// are read between two scored nodes and for nodes with many scores.
func TestScoreMetaMapsBuiltWhenRead(t *testing.T) {
	ctx := NewContext(newTestState(), &structs.Plan{}, nil, 1, 1)
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	for k, i := range []int{3, 7, 1, 8, 5, 2, 6, 4} {
		o := &RankedNode{Node: &structs.Node{ID: fmt.Sprintf("n%d", i)}, FinalScore: float64(i) / 10}
		for _, name := range names[:1+k] { // 1 to 8 scores
			o.addScore(name, float64(i)/10)
		}
		if i == 6 {
			for _, name := range names[8:] { // more than the inline room
				o.addScore(name, float64(i)/10)
			}
		}
		ctx.recordScore(o)
		if k == 2 {
			if got := ctx.Metrics().ScoreMetaData; len(got) != 3 || got[2].Scores["c"] != 0.1 {
				t.Fatalf("after three nodes: %+v", got)
			}
		}
	}
	for _, m := range ctx.Metrics().ScoreMetaData {
		if len(m.Scores) == 0 || m.Scores["a"] != m.NormScore {
			t.Errorf("%s: scores %v norm %v", m.NodeID, m.Scores, m.NormScore)
		}
		if m.NodeID == "n6" && len(m.Scores) != 9 {
			t.Errorf("n6: %d scores, want 9", len(m.Scores))
		}
	}
}
