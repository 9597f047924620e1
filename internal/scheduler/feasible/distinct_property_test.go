package feasible

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

func TestDistinctPropertyFilters(t *testing.T) {
	r1a := propNode("r1a", map[string]string{"rack": "r1"})
	r1b := propNode("r1b", map[string]string{"rack": "r1"})
	r2 := propNode("r2", map[string]string{"rack": "r2"})
	none := propNode("none", map[string]string{})
	nodes := []*structs.Node{r1a, r1b, r2, none}
	stopped := jobAlloc("stopped", "r2")
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	other := jobAlloc("other-group", "r2")
	other.TaskGroup = "other"

	cases := []struct {
		name     string
		level    string // job, group or task
		rtarget  string
		existing []*structs.Allocation
		planned  []*structs.Allocation // placements in the plan
		stops    []*structs.Allocation // plan stops
		want     string                // surviving node IDs
	}{
		{"empty: all with the property", "group", "", nil, nil, nil, "r1a,r1b,r2"},
		{"default one per value", "group", "", []*structs.Allocation{jobAlloc("a", "r1a")}, nil, nil, "r2"},
		{"RTarget 2 allows a second", "group", "2", []*structs.Allocation{jobAlloc("a", "r1a")}, nil, nil, "r1a,r1b,r2"},
		{"RTarget 2 full", "group", "2", []*structs.Allocation{jobAlloc("a", "r1a")},
			[]*structs.Allocation{jobAlloc("b", "r1b")}, nil, "r2"},
		{"terminal allocs free the value", "group", "", []*structs.Allocation{stopped}, nil, nil, "r1a,r1b,r2"},
		{"plan stops free the value", "group", "", []*structs.Allocation{jobAlloc("a", "r1a")}, nil,
			[]*structs.Allocation{jobAlloc("a", "r1a")}, "r1a,r1b,r2"},
		{"group level ignores other groups", "group", "", []*structs.Allocation{other}, nil, nil, "r1a,r1b,r2"},
		{"job level counts other groups", "job", "", []*structs.Allocation{other}, nil, nil, "r1a,r1b"},
		{"task level counts the group", "task", "", []*structs.Allocation{jobAlloc("a", "r2")}, nil, nil, "r1a,r1b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := newTestState(nodes...)
			st.allocs = c.existing
			plan := &structs.Plan{NodeAllocation: map[string][]*structs.Allocation{}, NodeUpdate: map[string][]*structs.Allocation{}}
			for _, a := range c.planned {
				plan.NodeAllocation[a.NodeID] = append(plan.NodeAllocation[a.NodeID], a)
			}
			for _, a := range c.stops {
				plan.NodeUpdate[a.NodeID] = append(plan.NodeUpdate[a.NodeID], a)
			}
			ctx := NewContext(st, plan, nil, 1, 1)
			con := &structs.Constraint{LTarget: "${meta.rack}", Operand: OpDistinctProperty, RTarget: c.rtarget}
			job := &structs.Job{ID: "j", Namespace: "default"}
			tg := &structs.TaskGroup{Name: "g", Tasks: []*structs.Task{{Name: "t"}}}
			switch c.level {
			case "job":
				job.Constraints = []*structs.Constraint{con}
			case "group":
				tg.Constraints = []*structs.Constraint{con}
			case "task":
				tg.Tasks[0].Constraints = []*structs.Constraint{con}
			}
			it := NewDistinctPropertyIterator(ctx, &nodeList{nodes: nodes})
			it.SetJob(job)
			it.SetTaskGroup(tg)
			var got []string
			for n := it.Next(); n != nil; n = it.Next() {
				got = append(got, n.ID)
			}
			if s := strings.Join(got, ","); s != c.want {
				t.Fatalf("feasible = %q, want %q", s, c.want)
			}
			if filtered := ctx.Metrics().NodesFiltered; filtered != len(nodes)-len(got) {
				t.Fatalf("NodesFiltered = %d, want %d", filtered, len(nodes)-len(got))
			}
		})
	}
}
