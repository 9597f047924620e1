package reconcile

import (
	"sort"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// rescheduleWindow: a failed allocation due within it is replaced now.
const rescheduleWindow = time.Second

// descRescheduleLater describes follow-up evaluations of delayed reschedules.
const descRescheduleLater = "created for delayed rescheduling"

// rescheduled is filterByRescheduleable's split of a set.
type rescheduled struct {
	untainted allocSet  // keep their slot
	now       allocSet  // replace in this pass
	later     []delayed // replace at a later time, by follow-up evaluation
}

// filterByRescheduleable splits untainted allocations: those that failed
// and may be replaced under the group's reschedule policy go to now (due
// within a second, this evaluation is their follow-up, or forced) or later
// (due in the future, no follow-up yet); the rest stay untainted.
//
// Ignored altogether: allocations already replaced (NextAllocation),
// server-stopped ones (batch: unless they finished successfully), and for
// services complete or lost ones, which are replaced as missing. A
// successfully completed batch allocation stays untainted, so it counts and
// is never run again. Allocations of an active deployment only reschedule
// when the deployment watcher allowed it (DesiredTransition.Reschedule).
func filterByRescheduleable(batch, disconnecting bool, set allocSet, now time.Time, evalID string,
	d *structs.Deployment, job *structs.Job, tg *structs.TaskGroup) rescheduled {
	out := rescheduled{untainted: allocSet{}, now: allocSet{}}
	policy := structs.ReschedulePolicyOf(job, tg.Name)
	for id, a := range set {
		if a.NextAllocation != "" && a.TerminalStatus() {
			continue
		}
		untainted, ignore := shouldFilter(a, batch)
		if untainted && !disconnecting {
			out.untainted[id] = a
		}
		if ignore {
			continue
		}
		nowOK, laterOK, when := reschedulable(a, policy, now, evalID, d)
		if !disconnecting && !nowOK {
			out.untainted[id] = a
			if laterOK {
				out.later = append(out.later, delayed{alloc: a, at: when})
			}
			continue
		}
		out.now[id] = a
	}
	sort.Slice(out.later, func(i, j int) bool {
		a, b := out.later[i].alloc, out.later[j].alloc
		if a.Index() != b.Index() {
			return a.Index() < b.Index()
		}
		return a.ID < b.ID
	})
	return out
}

// shouldFilter says whether an allocation counts as is (untainted) or is
// left out (ignore); neither means it failed and may reschedule.
func shouldFilter(a *structs.Allocation, batch bool) (untainted, ignore bool) {
	if batch {
		switch a.DesiredStatus {
		case structs.AllocDesiredStatusStop:
			if ranSuccessfully(a) {
				return true, false
			}
			return false, true
		case structs.AllocDesiredStatusEvict:
			return false, true
		}
		if a.ClientStatus == structs.AllocClientStatusFailed {
			return false, false
		}
		return true, false
	}
	switch a.DesiredStatus {
	case structs.AllocDesiredStatusStop, structs.AllocDesiredStatusEvict:
		return false, true
	}
	switch a.ClientStatus {
	case structs.AllocClientStatusComplete, structs.AllocClientStatusLost:
		return false, true
	case structs.AllocClientStatusFailed:
		return false, false
	}
	return true, false
}

// ranSuccessfully reports whether every task of a finished without failing.
func ranSuccessfully(a *structs.Allocation) bool {
	if a.ClientStatus == structs.AllocClientStatusComplete {
		return true
	}
	if a.ClientStatus != structs.AllocClientStatusFailed && len(a.TaskStates) > 0 {
		for _, ts := range a.TaskStates {
			if ts == nil || ts.State != structs.TaskStateDead || ts.Failed {
				return false
			}
		}
		return true
	}
	return false
}

// reschedulable decides when a failed allocation is replaced.
func reschedulable(a *structs.Allocation, p *structs.ReschedulePolicy, now time.Time, evalID string,
	d *structs.Deployment) (nowOK, laterOK bool, when time.Time) {
	if d != nil && a.DeploymentID == d.ID && d.Active() && !boolSet(a.DesiredTransition.Reschedule) {
		return false, false, time.Time{}
	}
	if boolSet(a.DesiredTransition.ForceReschedule) {
		return true, false, now
	}
	when, eligible := structs.NextRescheduleTime(a, p, now)
	if !eligible {
		return false, false, time.Time{}
	}
	if (evalID != "" && a.FollowupEvalID == evalID) || when.Sub(now) <= rescheduleWindow {
		return true, false, when
	}
	if a.FollowupEvalID == "" {
		return false, true, when
	}
	return false, false, when
}

// createRescheduleLaterEvals creates batched follow-up evaluations for
// allocations to reschedule later, and records each one's evaluation on
// it (an attribute update).
func (r *reconciler) createRescheduleLaterEvals(later []delayed, group string) {
	evalOf := r.batchFollowupEvals(later, structs.EvalTriggerAllocReschedule, descRescheduleLater)
	for _, d := range later {
		u := d.alloc.CopySkipJob()
		u.FollowupEvalID = evalOf[d.alloc.ID]
		r.res.AttributeUpdates = append(r.res.AttributeUpdates, u)
	}
}
