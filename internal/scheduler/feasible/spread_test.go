package feasible

import (
	"math"
	"testing"

	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/nomad/api"
)

func TestSpreadBoostFormulas(t *testing.T) {
	target := map[string]float64{"dc1": 5, "dc2": 3, implicitTarget: 2}
	cases := []struct {
		name   string
		target map[string]float64 // nil: even spread
		counts map[string]int
		value  string
		want   float64
	}{
		{"target unused", target, map[string]int{}, "dc1", 4.0 / 5},
		{"target partly used", target, map[string]int{"dc1": 2}, "dc1", 2.0 / 5},
		{"last one to the target", target, map[string]int{"dc1": 4}, "dc1", 0},
		{"target met", target, map[string]int{"dc1": 5}, "dc1", -1.0 / 5},
		{"target overused clamps", target, map[string]int{"dc2": 9}, "dc2", -1},
		{"implicit target", target, map[string]int{"dc9": 1}, "dc9", 0},
		{"no target and no remainder", map[string]float64{"dc1": 10}, map[string]int{}, "dc2", -1},
		{"zero percent target", map[string]float64{"dc1": 10, "dc2": 0}, map[string]int{}, "dc2", -1},
		{"even: nothing placed", nil, map[string]int{}, "a", 0},
		{"even: new value", nil, map[string]int{"a": 2, "b": 1}, "c", 1},
		{"even: above minimum", nil, map[string]int{"a": 3, "b": 1}, "a", -2.0 / 3},
		{"even: the minimum", nil, map[string]int{"a": 4, "b": 1}, "b", 3.0 / 4},
		{"even: already even", nil, map[string]int{"a": 2, "b": 2}, "a", -1},
	}
	for _, c := range cases {
		var got float64
		if c.target != nil {
			got = targetBoost(c.target, c.counts, c.value)
		} else {
			got = evenBoost(c.counts, c.value)
		}
		if math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: boost = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSpreadIteratorWeightsAndCounts(t *testing.T) {
	dc1 := &structs.Node{ID: "n1", Datacenter: "dc1", Meta: map[string]string{"rack": "a"}}
	dc2 := &structs.Node{ID: "n2", Datacenter: "dc2", Meta: map[string]string{"rack": "a"}}
	bare := &structs.Node{ID: "n3", Datacenter: "dc3"}
	st := newTestState(dc1, dc2, bare)
	// Two existing allocs in dc1; one proposed in the plan in dc2.
	st.allocs = []*structs.Allocation{jobAlloc("a1", "n1"), jobAlloc("a2", "n1")}
	plan := &structs.Plan{NodeAllocation: map[string][]*structs.Allocation{"n2": {jobAlloc("p1", "n2")}}}
	ctx := NewContext(st, plan, nil, 1, 1)

	job := &structs.Job{ID: "j", Namespace: "default", Spreads: []*structs.Spread{{
		Attribute: "${node.datacenter}", Weight: w(75),
		SpreadTarget: []*api.SpreadTarget{{Value: "dc1", Percent: 50}, {Value: "dc2", Percent: 50}},
	}}}
	tg := &structs.TaskGroup{Name: "g", Count: 10, Spreads: []*structs.Spread{{Attribute: "${meta.rack}", Weight: w(25)}}}
	it := &SpreadIterator{ctx: ctx, source: rankList(dc1, dc2, bare)}
	it.SetJob(job)
	it.SetTaskGroup(tg)
	want := map[string]float64{
		// dc: (5-(2+1))/5 * 0.75; rack a used 3 times, the only value: even → -1 * 0.25
		"n1": 0.4*0.75 - 0.25,
		// dc: (5-(1+1))/5 * 0.75; rack as above
		"n2": 0.6*0.75 - 0.25,
		// no dc target for dc3 and no remainder: -1; rack missing: -1
		"n3": -1,
	}
	for opt := it.Next(); opt != nil; opt = it.Next() {
		if got := opt.ScoreMap()["allocation-spread"]; math.Abs(got-want[opt.Node.ID]) > 1e-9 {
			t.Errorf("%s: spread = %v, want %v", opt.Node.ID, got, want[opt.Node.ID])
		}
	}
}
