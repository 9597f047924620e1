package reconcile

import (
	"github.com/drover-project/drover/internal/structs"
)

// placements are computePlacements' output: named replacements first
// (reschedules, lost), then fresh names to reach the count.
type placements struct {
	named []Placement
	fresh *Fresh
}

func (p placements) count() int {
	n := len(p.named)
	if p.fresh != nil {
		n += p.fresh.Count
	}
	return n
}

// computePlacements lists what the group needs placed: replacements of
// allocations to reschedule now, then of lost ones while below the count,
// then fresh names. While canaries are unpromoted a replacement of a
// non-canary keeps its previous job version.
func computePlacements(job *structs.Job, tg *structs.TaskGroup, names *nameIndex, untainted, migrate, rescheduleNow,
	lost allocSet, canarying bool) placements {
	var out placements
	existing := len(untainted) + len(migrate)
	keepVersion := func(prev *structs.Allocation) *structs.Job {
		if canarying && !isCanary(prev) && prev.Job != nil && !OnVersion(prev, job) {
			return prev.Job
		}
		return nil
	}
	for _, a := range rescheduleNow.nameOrder() {
		if existing >= tg.Count {
			break
		}
		existing++
		// A disconnected allocation (unknown) keeps running: its
		// replacement does not stop it.
		resched := a.ClientStatus != structs.AllocClientStatusUnknown && a.ClientStatus != structs.AllocClientStatusRunning
		out.named = append(out.named, Placement{Name: a.Name, TaskGroup: tg, PreviousAlloc: a, Reschedule: resched,
			Canary: isCanary(a), Job: keepVersion(a)})
	}
	// A lost allocation that already has a live replacement (one placed
	// while it was disconnected, now past lost_after) is not replaced
	// again: its replacement holds its name, and a second one would leave
	// another lost allocation's name empty.
	replaced := make(map[string]bool)
	for _, set := range []allocSet{untainted, migrate} {
		for _, a := range set {
			if a.PreviousAllocation != "" {
				replaced[a.PreviousAllocation] = true
			}
		}
	}
	for _, a := range lost.nameOrder() {
		if existing >= tg.Count {
			break
		}
		if replaced[a.ID] {
			continue
		}
		existing++
		out.named = append(out.named, Placement{Name: a.Name, TaskGroup: tg, PreviousAlloc: a, Lost: true,
			Canary: isCanary(a), Job: keepVersion(a)})
	}
	if existing < tg.Count && !canarying {
		f := names.fresh(tg, tg.Count-existing)
		out.fresh = &f
	}
	return out
}

// placeAllocs commits the placements the deployment allows and returns
// what is left of the budget. When the deployment may place (not paused,
// failed or canarying) all of them go, and the failed allocations being
// rescheduled are stopped by the scheduler with their replacement;
// otherwise only replacements of lost allocations and reschedules (not of
// a failed deployment's own allocations) go.
func (r *reconciler) placeAllocs(ready bool, p placements, rescheduleNow, lost allocSet, limit int, du *structs.DesiredUpdates) int {
	if p.count() == 0 {
		return limit
	}
	if ready {
		r.res.Place = append(r.res.Place, p.named...)
		du.Place += uint64(len(p.named))
		if p.fresh != nil {
			r.res.Fresh = append(r.res.Fresh, *p.fresh)
			du.Place += uint64(p.fresh.Count)
		}
		for _, pl := range p.named {
			if pl.Reschedule {
				du.RescheduleNow++
			}
		}
		return max(limit-p.count(), 0)
	}
	for _, pl := range p.named {
		prev := pl.PreviousAlloc
		switch {
		case pl.Lost:
		case prev != nil && rescheduleNow[prev.ID] != nil:
			if r.deploymentFailed && r.deployment != nil && prev.DeploymentID == r.deployment.ID {
				continue
			}
			if pl.Reschedule {
				du.RescheduleNow++
			}
		default:
			continue
		}
		r.res.Place = append(r.res.Place, pl)
		du.Place++
	}
	return limit
}

// computeDestructiveUpdates replaces at most limit outdated allocations,
// in name order: each is a stop and a placement of the same name in one
// plan. The rest wait for a later pass (the deployment watcher's, as
// replacements turn healthy): this is how max_parallel rolls.
func (r *reconciler) computeDestructiveUpdates(tg *structs.TaskGroup, destructive allocSet, limit int, du *structs.DesiredUpdates) {
	list := destructive.nameOrder()
	n := min(len(list), limit)
	du.DestructiveUpdate += uint64(n)
	du.Ignore += uint64(len(list) - n)
	for _, a := range list[:n] {
		r.res.Destructive = append(r.res.Destructive, Destructive{Name: a.Name, TaskGroup: tg, Old: a})
	}
}

// computeMigrations stops every migrating allocation and places its
// replacement (a canary's replacement is a canary; while canarying a
// non-canary keeps its version), unless the drain asked for no placement
// (DesiredTransition.MigrateDisablePlacement).
func (r *reconciler) computeMigrations(tg *structs.TaskGroup, migrate allocSet, canarying bool, du *structs.DesiredUpdates) {
	du.Migrate += uint64(len(migrate))
	for _, a := range migrate.nameOrder() {
		r.res.Stop = append(r.res.Stop, Stop{Alloc: a, Description: DescMigrating})
		if boolSet(a.DesiredTransition.MigrateDisablePlacement) {
			continue
		}
		var keep *structs.Job
		if canarying && !isCanary(a) && a.Job != nil && !OnVersion(a, r.job) {
			keep = a.Job
		}
		r.res.Place = append(r.res.Place, Placement{Name: a.Name, TaskGroup: tg, PreviousAlloc: a, Canary: isCanary(a), Job: keep})
	}
}
