package feasible

import (
	"math"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

func TestNodeAffinityScore(t *testing.T) {
	ssd := &structs.Affinity{LTarget: "${meta.disk}", Operand: "=", RTarget: "ssd", Weight: w(80)}
	rack := &structs.Affinity{LTarget: "${meta.rack}", Operand: "set_contains_any", RTarget: "r1,r2", Weight: w(-20)}
	dflt := &structs.Affinity{LTarget: "${meta.disk}", Operand: "!=", RTarget: "hdd"} // weight 50
	cases := []struct {
		name      string
		job, grp  []*structs.Affinity
		task      []*structs.Affinity
		meta      map[string]string
		want      float64
		wantScore bool
	}{
		{"single match", nil, []*structs.Affinity{ssd}, nil, map[string]string{"disk": "ssd"}, 1, true},
		{"no match no score", nil, []*structs.Affinity{ssd}, nil, map[string]string{"disk": "hdd"}, 0, false},
		{"positive and negative", []*structs.Affinity{ssd}, []*structs.Affinity{rack}, nil,
			map[string]string{"disk": "ssd", "rack": "r2"}, 60.0 / 100, true},
		{"only negative", []*structs.Affinity{ssd}, []*structs.Affinity{rack}, nil,
			map[string]string{"disk": "hdd", "rack": "r1"}, -20.0 / 100, true},
		{"task affinity with default weight", nil, []*structs.Affinity{ssd}, []*structs.Affinity{dflt},
			map[string]string{"disk": "nvme"}, 50.0 / 130, true},
		{"missing attribute never matches =", nil, []*structs.Affinity{ssd}, nil, map[string]string{}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := NewContext(newTestState(), &structs.Plan{}, nil, 1, 1)
			it := &NodeAffinityIterator{ctx: ctx, source: rankList(propNode("n", c.meta))}
			it.SetJob(&structs.Job{Affinities: c.job})
			it.SetTaskGroup(&structs.TaskGroup{Affinities: c.grp, Tasks: []*structs.Task{{Affinities: c.task}}})
			opt := it.Next()
			got, ok := opt.ScoreMap()["node-affinity"]
			if ok != c.wantScore || math.Abs(got-c.want) > 1e-9 {
				t.Fatalf("score = %v (present %v), want %v (present %v)", got, ok, c.want, c.wantScore)
			}
		})
	}
}
