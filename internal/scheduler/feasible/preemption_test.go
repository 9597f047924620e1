package feasible

import (
	"sort"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// victim is a running alloc of a job with the given priority and grant.
func victim(id string, priority int, cpu, mem int64, ports ...int) *structs.Allocation {
	a := &structs.Allocation{ID: id, NodeID: "n", Job: &structs.Job{ID: "job-" + id, Priority: priority},
		DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusRunning,
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"t": {Cpu: structs.AllocatedCpuResources{CpuShares: cpu}, Memory: structs.AllocatedMemoryResources{MemoryMB: mem}},
		}}}
	for _, p := range ports {
		a.AllocatedResources.Shared.Ports = append(a.AllocatedResources.Shared.Ports, structs.AllocatedPortMapping{Label: "p", Value: p})
	}
	return a
}

func TestChoosePreemptions(t *testing.T) {
	type tc struct {
		name     string
		priority int
		need     structs.ComparableResources
		ports    []int
		allocs   []*structs.Allocation
		want     string
	}
	table := []tc{
		{"lowest priority first", 70, structs.ComparableResources{CPU: 500}, nil,
			[]*structs.Allocation{victim("p40", 40, 500, 0), victim("p20", 20, 500, 0), victim("p30", 30, 500, 0)}, "p20"},
		{"never equal or higher priority", 50, structs.ComparableResources{CPU: 500}, nil,
			[]*structs.Allocation{victim("p50", 50, 1000, 0), victim("p60", 60, 1000, 0)}, "-"},
		{"delta below 10 is not enough", 50, structs.ComparableResources{CPU: 500}, nil,
			[]*structs.Allocation{victim("p41", 41, 1000, 0)}, "-"},
		{"delta of exactly 10 preempts", 50, structs.ComparableResources{CPU: 500}, nil,
			[]*structs.Allocation{victim("p40", 40, 1000, 0)}, "p40"},
		{"best match within the priority", 70, structs.ComparableResources{CPU: 500, MemoryMB: 512}, nil,
			[]*structs.Allocation{victim("big", 20, 4000, 4096), victim("fit", 20, 500, 512), victim("small", 20, 100, 64)}, "fit"},
		{"several when one is not enough", 70, structs.ComparableResources{CPU: 900}, nil,
			[]*structs.Allocation{victim("a", 20, 500, 0), victim("b", 20, 500, 0), victim("c", 30, 500, 0)}, "a,b"},
		{"moves up a priority only when needed", 70, structs.ComparableResources{CPU: 900}, nil,
			[]*structs.Allocation{victim("low", 20, 500, 0), victim("mid", 30, 500, 0), victim("high", 60, 500, 0)}, "low,mid"},
		{"unneeded victims dropped", 70, structs.ComparableResources{CPU: 1000}, nil,
			// small (lowest) is picked first, then big covers alone: small is dropped.
			[]*structs.Allocation{victim("small", 10, 100, 0), victim("big", 20, 1000, 0)}, "big"},
		{"not enough in total", 70, structs.ComparableResources{CPU: 5000}, nil,
			[]*structs.Allocation{victim("a", 20, 500, 0), victim("b", 50, 500, 0)}, "-"},
		{"static port holder is evicted", 70, structs.ComparableResources{}, []int{8080},
			[]*structs.Allocation{victim("other", 10, 100, 0), victim("holder", 40, 100, 0, 8080)}, "holder"},
		{"static port held by a peer blocks", 70, structs.ComparableResources{}, []int{8080},
			[]*structs.Allocation{victim("other", 10, 100, 0), victim("holder", 65, 100, 0, 8080)}, "-"},
		{"port holder also counts towards resources", 70, structs.ComparableResources{CPU: 300}, []int{8080},
			[]*structs.Allocation{victim("other", 10, 300, 0), victim("holder", 40, 400, 0, 8080)}, "holder"},
	}
	for _, c := range table {
		t.Run(c.name, func(t *testing.T) {
			got := choosePreemptions(preemptRequest{priority: c.priority, need: c.need, ports: c.ports}, c.allocs)
			ids := []string{}
			for _, a := range got {
				ids = append(ids, a.ID)
			}
			sort.Strings(ids)
			s := strings.Join(ids, ",")
			if got == nil || s == "" {
				s = "-"
			}
			if s != c.want {
				t.Fatalf("victims = %s, want %s", s, c.want)
			}
		})
	}
}

func TestPreemptionPenalty(t *testing.T) {
	cases := []struct {
		victims []*structs.Allocation
		want    float64
	}{
		{nil, 0},
		{[]*structs.Allocation{victim("a", 20, 1, 1)}, (20 + 1) / 100.0},
		{[]*structs.Allocation{victim("a", 20, 1, 1), victim("b", 10, 1, 1)}, (20 + 1.5) / 100.0},
		{[]*structs.Allocation{victim("a", 90, 1, 1), victim("b", 90, 1, 1), victim("c", 90, 1, 1)}, 0.93},
		{[]*structs.Allocation{victim("a", 99, 1, 1), victim("b", 99, 1, 1), victim("c", 99, 1, 1)}, 1}, // capped
	}
	for i, c := range cases {
		opt := &RankedNode{Node: &structs.Node{ID: "n"}, Preempted: c.victims}
		it := &PreemptionScoringIterator{source: &staticRank{opts: []*RankedNode{opt}}}
		it.Next()
		got, ok := opt.ScoreMap()["preemption"]
		if (len(c.victims) > 0) != ok || got != -c.want {
			t.Errorf("case %d: score = %v (present %v), want %v", i, got, ok, -c.want)
		}
	}
}
