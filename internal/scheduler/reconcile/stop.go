package reconcile

import (
	"github.com/drover-project/drover/internal/structs"
)

// computeStop stops what the group no longer needs and returns it. Lost
// allocations are always stopped (client status lost). When the untainted
// (less those unknown, which may come back) and migrating allocations
// exceed the count, the excess goes: first old allocations sharing a name
// with promoted canaries, then migrating ones, then failed ones, then the
// highest names, then anything (duplicate names). Unpromoted canaries are never counted
// or stopped here. It removes what it stops from untainted and migrate.
// followups names the follow-up evaluation of lost allocations whose
// replacement waits (stop_on_client_after).
func (r *reconciler) computeStop(tg *structs.TaskGroup, names *nameIndex, untainted, migrate *allocSet,
	lost, canaries allocSet, canarying bool, followups map[string]string) allocSet {
	stop := allocSet{}
	for _, a := range lost.nameOrder() {
		stop[a.ID] = a
		if !a.ServerTerminalStatus() {
			r.res.Stop = append(r.res.Stop, Stop{Alloc: a, ClientStatus: structs.AllocClientStatusLost, Description: DescLost,
				FollowupEvalID: followups[a.ID]})
		}
	}

	// Unknown allocations (disconnected, may come back) are neither
	// counted nor stopped.
	candidates := allocSet{}
	for id, a := range *untainted {
		if a.ClientStatus == structs.AllocClientStatusUnknown {
			continue
		}
		if _, ok := canaries[id]; ok && canarying {
			continue
		}
		candidates[id] = a
	}
	remove := len(candidates) + len(*migrate) - tg.Count
	if remove <= 0 {
		return stop
	}
	mark := func(a *structs.Allocation, from *allocSet) {
		stop[a.ID] = a
		delete(*from, a.ID)
		delete(candidates, a.ID)
		names.unset(a.Index())
		// A failed allocation is marked stop too: left desired run, it
		// looked wanted and was counted again by the next evaluation.
		if !a.ServerTerminalStatus() && (!a.ClientTerminalStatus() || a.ClientStatus == structs.AllocClientStatusFailed) {
			r.res.Stop = append(r.res.Stop, Stop{Alloc: a, Description: DescNotNeeded})
		}
		remove--
	}

	if !canarying && len(canaries) > 0 {
		canaryNames := canaries.nameSet()
		for _, a := range candidates.difference(canaries).nameOrder() {
			if _, ok := canaryNames[a.Name]; ok {
				mark(a, untainted)
				if remove == 0 {
					return stop
				}
			}
		}
	}
	if len(*migrate) > 0 {
		removeNames := newNameIndex(names.job, names.group, tg.Count, *migrate).highest(remove)
		for _, a := range reverse((*migrate).nameOrder()) {
			if _, ok := removeNames[a.Name]; ok {
				mark(a, migrate)
				if remove == 0 {
					return stop
				}
			}
		}
	}
	// Failed allocations (ones the reschedule policy does not replace
	// still count) go before any that runs, highest names first.
	for _, a := range reverse(candidates.nameOrder()) {
		if a.ClientStatus == structs.AllocClientStatusFailed {
			mark(a, untainted)
			if remove == 0 {
				return stop
			}
		}
	}
	removeNames := newNameIndex(names.job, names.group, tg.Count, candidates).highest(remove)
	for _, a := range reverse(candidates.nameOrder()) {
		if _, ok := removeNames[a.Name]; ok {
			mark(a, untainted)
			if remove == 0 {
				return stop
			}
		}
	}
	for _, a := range reverse(candidates.nameOrder()) {
		mark(a, untainted)
		if remove == 0 {
			return stop
		}
	}
	return stop
}

func reverse(l []*structs.Allocation) []*structs.Allocation {
	for i, j := 0, len(l)-1; i < j; i, j = i+1, j-1 {
		l[i], l[j] = l[j], l[i]
	}
	return l
}
