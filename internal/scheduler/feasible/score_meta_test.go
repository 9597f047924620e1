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
