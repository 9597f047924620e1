package reconcile

import (
	"github.com/drover-project/drover/internal/structs"
)

// computeGroup reconciles one task group and reports whether the group's
// part of the current deployment is complete. It runs the steps in order;
// each step owns one concern and changes only the sets it is handed (by
// pointer) and the result.
func (r *reconciler) computeGroup(name string, all allocSet) bool {
	du := r.desired(name)
	tg := r.job.LookupTaskGroup(name)
	if tg == nil || tg.Count <= 0 {
		// Group removed or scaled to zero.
		stopAll(r.res, du, r.in.TaintedNodes, all, DescNotNeeded)
		return true
	}

	dstate, existingDeployment := r.initializeDeploymentState(tg)

	// Batch: finished allocations of older versions no longer count.
	var ignoreOld allocSet
	all, ignoreOld = filterOldTerminal(r.in.Batch, r.job, all)
	du.Ignore += uint64(len(ignoreOld))

	canaries := r.cancelUnneededCanaries(&all, du)

	b := classify(all, tg, r.in.TaintedNodes, r.in.Now)
	du.Ignore += uint64(len(b.ignore))

	if len(b.reconnecting) > 0 {
		r.stopFailedReplacements(b.untainted, b.reconnecting, du)
	}
	rs := filterByRescheduleable(r.in.Batch, false, b.untainted, r.in.Now, r.in.EvalID, r.deployment, r.job, tg)
	untainted := rs.untainted
	rescheduleNow := rs.now
	rescheduleLater := rs.later

	if len(b.reconnecting) > 0 {
		r.computeReconnecting(tg, &untainted, &b.reconnecting, all, du)
	}
	// Expired disconnected allocations are lost.
	b.lost = b.lost.union(b.expiring)

	// Lost allocations their client may still run (stop_on_client_after)
	// are replaced only once it has stopped them; until then the group
	// places nothing.
	lostLater := delayByStopAfter(tg, b.lost, r.in.Now)
	lostLaterEvals := r.batchFollowupEvals(lostLater, structs.EvalTriggerRetryFailedAlloc, descLostLater)

	if len(b.disconnecting) > 0 {
		r.computeDisconnecting(tg, b.disconnecting, &untainted, &rescheduleNow, du)
	}

	r.createRescheduleLaterEvals(rescheduleLater, tg.Name)
	du.RescheduleLater += uint64(len(rescheduleLater))

	names := newNameIndex(r.job.ID, tg.Name, tg.Count, untainted.union(b.migrate, rescheduleNow, b.lost))

	canarying := dstate != nil && dstate.DesiredCanaries != 0 && !dstate.Promoted
	stop := r.computeStop(tg, names, &untainted, &b.migrate, b.lost, canaries, canarying, lostLaterEvals)
	du.Stop += uint64(len(stop))

	ignore, inplace, destructive := r.computeUpdates(tg, untainted)
	du.Ignore += uint64(len(ignore))
	du.InPlaceUpdate += uint64(len(inplace))
	r.res.InPlace = append(r.res.InPlace, inplace...)
	if !existingDeployment && dstate != nil {
		dstate.DesiredTotal += len(destructive) + len(inplace)
	}

	if canarying {
		untainted = untainted.difference(canaries)
	}
	requiresCanaries := requiresCanaries(tg, dstate, destructive, canaries)
	if requiresCanaries {
		r.computeCanaries(tg, dstate, destructive, canaries, names, du)
	}
	canarying = dstate != nil && dstate.DesiredCanaries != 0 && !dstate.Promoted

	limit := r.computeUnderProvisionedBy(tg, untainted, destructive, b.migrate, canarying)

	var place placements
	if len(lostLater) == 0 && !lostStillStopping(tg, all, r.in.Now, r.in.EvalID) {
		place = computePlacements(r.job, tg, names, untainted, b.migrate, rescheduleNow, b.lost, canarying)
	}
	if !existingDeployment && dstate != nil {
		dstate.DesiredTotal += place.count()
	}
	placeReady := !r.deploymentPaused && !r.deploymentFailed && !canarying
	limit = r.placeAllocs(placeReady, place, rescheduleNow, b.lost, limit, du)

	if placeReady {
		r.computeDestructiveUpdates(tg, destructive, limit, du)
	} else {
		du.Ignore += uint64(len(destructive))
	}
	r.computeMigrations(tg, b.migrate, canarying, du)

	r.createDeployment(tg, existingDeployment, dstate, all, destructive)

	return r.isDeploymentComplete(tg.Name, len(destructive)+len(inplace)+place.count()+len(b.migrate)+
		len(rescheduleNow)+len(rescheduleLater), requiresCanaries)
}

// stopAll stops every allocation of a set the server still wants run (job
// stopped or purged, group removed or scaled to zero), finished ones too:
// a failed allocation left desired "run" would be taken for a reschedule
// when the job runs again. Live ones on lost nodes are marked lost.
func stopAll(res *Result, du *structs.DesiredUpdates, tainted map[string]*structs.Node, all allocSet, desc string) {
	for _, a := range all.nameOrder() {
		if a.ServerTerminalStatus() {
			continue
		}
		s := Stop{Alloc: a, Description: desc}
		if n, ok := tainted[a.NodeID]; ok && !a.ClientTerminalStatus() &&
			(n == nil || n.Status == structs.NodeStatusDown || n.Status == structs.NodeStatusDisconnected) {
			s.ClientStatus = structs.AllocClientStatusLost
		}
		res.Stop = append(res.Stop, s)
		du.Stop++
	}
}
