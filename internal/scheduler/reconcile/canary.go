package reconcile

import (
	"github.com/drover-project/drover/internal/structs"
)

// cancelUnneededCanaries stops unpromoted canaries of an older deployment
// and of a failed current one, and the current deployment's canaries that
// are migrating or lost (the deployment places them again); it removes
// every stopped one from all and returns the live canaries of the current
// deployment.
func (r *reconciler) cancelUnneededCanaries(all *allocSet, du *structs.DesiredUpdates) allocSet {
	var stopIDs []string
	for _, d := range []*structs.Deployment{r.oldDeployment, r.deployment} {
		if d == nil || d == r.deployment && d.Status != structs.DeploymentStatusFailed {
			continue
		}
		for _, st := range d.TaskGroups {
			if st != nil && !st.Promoted {
				stopIDs = append(stopIDs, st.PlacedCanaries...)
			}
		}
	}
	stopSet := all.fromKeys(stopIDs)
	for _, a := range stopSet.nameOrder() {
		if !a.TerminalStatus() {
			r.res.Stop = append(r.res.Stop, Stop{Alloc: a, Description: DescNotNeeded})
			du.Stop++
		}
	}
	*all = all.difference(stopSet)

	if r.deployment == nil {
		return allocSet{}
	}
	var ids []string
	for _, st := range r.deployment.TaskGroups {
		if st != nil {
			ids = append(ids, st.PlacedCanaries...)
		}
	}
	canaries := all.fromKeys(ids)
	var tg *structs.TaskGroup
	for _, a := range canaries {
		tg = r.job.LookupTaskGroup(a.TaskGroup)
		break
	}
	if tg == nil {
		return canaries
	}
	b := classify(canaries, tg, r.in.TaintedNodes, r.in.Now)
	// Not counted in DesiredTGUpdates: the deployment places them again.
	for _, a := range b.migrate.nameOrder() {
		if !a.TerminalStatus() {
			r.res.Stop = append(r.res.Stop, Stop{Alloc: a, Description: DescMigrating})
		}
	}
	for _, a := range b.lost.nameOrder() {
		if !a.TerminalStatus() {
			r.res.Stop = append(r.res.Stop, Stop{Alloc: a, ClientStatus: structs.AllocClientStatusLost, Description: DescLost})
		}
	}
	*all = all.difference(b.migrate, b.lost)
	return b.untainted
}

// requiresCanaries reports whether the group must (still) place canaries:
// its strategy asks for them, the change is destructive, fewer are placed
// than asked, and they were not promoted.
func requiresCanaries(tg *structs.TaskGroup, dstate *structs.DeploymentState, destructive, canaries allocSet) bool {
	promoted := dstate != nil && dstate.Promoted
	return dstate != nil && len(destructive) != 0 && len(canaries) < canaryCount(tg.Update) && !promoted
}

// computeCanaries records the canaries the deployment wants and, unless it
// is paused or failed, places the missing ones, named after allocations
// being replaced.
func (r *reconciler) computeCanaries(tg *structs.TaskGroup, dstate *structs.DeploymentState, destructive, canaries allocSet,
	names *nameIndex, du *structs.DesiredUpdates) {
	want := canaryCount(tg.Update)
	dstate.DesiredCanaries = want
	if r.deploymentPaused || r.deploymentFailed {
		return
	}
	missing := want - len(canaries)
	du.Canary += uint64(missing)
	for _, name := range names.nextCanaries(missing, canaries, destructive) {
		r.res.Place = append(r.res.Place, Placement{Name: name, TaskGroup: tg, Canary: true})
	}
}
