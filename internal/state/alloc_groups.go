package state

import (
	"unique"

	"github.com/drover-project/drover/internal/structs"
)

// AllocGroup names the task group an allocation belongs to: the unit the
// scheduler's job anti-affinity counts on a node.
type AllocGroup struct {
	Namespace, JobID, TaskGroup string
}

// GroupOf returns the canonical handle of a's group. Handles of equal
// groups are equal, and comparing two is one word compare.
func GroupOf(a *structs.Allocation) unique.Handle[AllocGroup] {
	return unique.Make(AllocGroup{Namespace: a.Namespace, JobID: a.JobID, TaskGroup: a.TaskGroup})
}

// CountGroup reports how many of the allocations belong to group g.
//
// The scheduler asks this of every node it considers for a placement. The
// groups of these allocations are computed once and kept beside them (a
// handle per allocation, in one small array), and the allocations are
// shared by every evaluation that reads the node unchanged: a count then
// reads that array instead of loading each allocation object from memory.
func (l *LiveAllocs) CountGroup(g unique.Handle[AllocGroup]) int {
	groups := l.groups.Load()
	if groups == nil {
		gs := make([]unique.Handle[AllocGroup], len(l.Allocs))
		for i, a := range l.Allocs {
			gs[i] = GroupOf(a)
		}
		// Two first callers racing may both build; they store equal
		// values.
		l.groups.Store(&gs)
		groups = &gs
	}
	n := 0
	for _, h := range *groups {
		if h == g {
			n++
		}
	}
	return n
}
