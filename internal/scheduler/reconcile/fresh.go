package reconcile

import (
	"iter"

	"github.com/drover-project/drover/internal/structs"
)

// Fresh asks for Count new allocations of one group, named with the
// lowest indexes its allocations do not use. They are not built here: a
// group's count may be far more than the cluster can hold (a count of
// 1,000,000,000 from before job_max_count existed, replayed from the Raft
// log), so the scheduler names them one at a time as it places them and
// stops at the group's first failure. The memory a pass needs then grows
// with what it places, never with the count.
type Fresh struct {
	TaskGroup *structs.TaskGroup
	Count     int

	jobID string
	used  map[uint]bool // indexes the group's kept allocations hold
}

// Names yields the names of the fresh placements in order, lowest free
// index first; it stops after Count names or when the consumer stops.
func (f Fresh) Names() iter.Seq[string] {
	return func(yield func(string) bool) {
		for n, idx := 0, uint(0); n < f.Count; idx++ {
			if f.used[idx] {
				continue
			}
			if !yield(structs.AllocName(f.jobID, f.TaskGroup.Name, idx)) {
				return
			}
			n++
		}
	}
}
