package reconcile

import (
	"github.com/drover-project/drover/internal/structs"
)

// computeUpdates sorts the untainted allocations by what moving them to
// the current job version takes: nothing (already on it, or finished), an
// in-place update (returned as the updated allocation), or a destructive
// update. TasksUpdated decides destructive changes; for the rest the
// input's UpdateFn checks the allocation still fits on its node.
func (r *reconciler) computeUpdates(tg *structs.TaskGroup, untainted allocSet) (ignore allocSet, inplace []*structs.Allocation, destructive allocSet) {
	ignore, destructive = allocSet{}, allocSet{}
	for _, a := range untainted.nameOrder() {
		if OnVersion(a, r.job) {
			ignore[a.ID] = a
			continue
		}
		if a.Job == nil || a.Job.LookupTaskGroup(tg.Name) == nil {
			destructive[a.ID] = a
			continue
		}
		if d, _ := TasksUpdated(a.Job, r.job, tg.Name); d {
			destructive[a.ID] = a
			continue
		}
		if a.TerminalStatus() {
			// A finished allocation is not rewritten for a new version.
			ignore[a.ID] = a
			continue
		}
		var updated *structs.Allocation
		var d bool
		if r.in.Update != nil {
			d, updated = r.in.Update(a, r.job, tg)
		} else {
			updated = a.CopySkipJob()
			updated.Job = r.job
		}
		if d || updated == nil {
			destructive[a.ID] = a
			continue
		}
		inplace = append(inplace, updated)
	}
	return ignore, inplace, destructive
}
