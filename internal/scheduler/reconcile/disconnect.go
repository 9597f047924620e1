package reconcile

import (
	"sort"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Evaluation trigger and description of disconnect timeouts.
const (
	EvalTriggerMaxDisconnectTimeout = "max-disconnect-timeout"
	descDisconnectTimeout           = "created for delayed disconnect timeout"
)

// lostAfter is how long the group tolerates a disconnected client before
// its allocations are lost: disconnect.lost_after, or the deprecated
// max_client_disconnect; 0 when it does not.
func lostAfter(tg *structs.TaskGroup) time.Duration {
	if tg.Disconnect != nil && tg.Disconnect.LostAfter != nil {
		return *tg.Disconnect.LostAfter
	}
	if tg.MaxClientDisconnect != nil {
		return *tg.MaxClientDisconnect
	}
	return 0
}

func supportsDisconnect(tg *structs.TaskGroup) bool { return lostAfter(tg) > 0 }

// replaceOnDisconnect is disconnect.replace (default true).
func replaceOnDisconnect(tg *structs.TaskGroup) bool {
	if tg.Disconnect != nil && tg.Disconnect.Replace != nil {
		return *tg.Disconnect.Replace
	}
	return true
}

// lastClientStatus is the last recorded ClientStatus transition of a.
func lastClientStatus(a *structs.Allocation) *structs.AllocState {
	for i := len(a.AllocStates) - 1; i >= 0; i-- {
		if s := a.AllocStates[i]; s != nil && s.Field == "ClientStatus" {
			return s
		}
	}
	return nil
}

// needsToReconnect reports whether a was last marked unknown.
func needsToReconnect(a *structs.Allocation) bool {
	s := lastClientStatus(a)
	return s != nil && s.Value == structs.AllocClientStatusUnknown
}

// expired reports whether a has been unknown for longer than the group
// tolerates.
func expired(a *structs.Allocation, tg *structs.TaskGroup, now time.Time) bool {
	if a.ClientStatus != structs.AllocClientStatusUnknown && !needsToReconnect(a) {
		return false
	}
	s := lastClientStatus(a)
	if s == nil || s.Value != structs.AllocClientStatusUnknown {
		return false
	}
	return now.After(s.Time.Add(lostAfter(tg)))
}

// computeReconnecting settles allocations whose node came back: the
// original is kept when it still runs (desired run, not failed) and its
// replacements are stopped; a failed or stopped original is stopped and
// its replacement kept. Kept originals rejoin untainted and are sent as
// reconnect updates.
func (r *reconciler) computeReconnecting(tg *structs.TaskGroup, untainted, reconnecting *allocSet, all allocSet, du *structs.DesiredUpdates) {
	replacementsOf := make(map[string][]*structs.Allocation)
	for _, a := range all {
		if a.PreviousAllocation != "" && !a.TerminalStatus() {
			replacementsOf[a.PreviousAllocation] = append(replacementsOf[a.PreviousAllocation], a)
		}
	}
	for _, orig := range reconnecting.nameOrder() {
		keep := orig.DesiredStatus == structs.AllocDesiredStatusRun && orig.ClientStatus != structs.AllocClientStatusFailed &&
			!boolSet(orig.DesiredTransition.Migrate)
		if !keep {
			if !orig.ServerTerminalStatus() {
				r.res.Stop = append(r.res.Stop, Stop{Alloc: orig, Description: DescReconnected})
				du.Stop++
			}
			delete(*reconnecting, orig.ID)
			continue
		}
		for _, repl := range replacementsOf[orig.ID] {
			r.res.Stop = append(r.res.Stop, Stop{Alloc: repl, Description: DescReconnected})
			du.Stop++
			delete(*untainted, repl.ID)
		}
		u := orig.CopySkipJob()
		u.AllocStates = append(u.AllocStates, &structs.AllocState{Field: "ClientStatus",
			Value: structs.AllocClientStatusRunning, Time: r.in.Now})
		u.ClientStatus = structs.AllocClientStatusRunning
		r.res.ReconnectUpdates = append(r.res.ReconnectUpdates, u)
		du.Reconnect++
		(*untainted)[orig.ID] = orig
	}
}

// computeDisconnecting marks running allocations on disconnected nodes
// unknown, with a follow-up evaluation when the window ends (allocations
// within 5 s share one); when the group replaces on disconnect they also go
// to rescheduleNow so a replacement is placed at once; otherwise they keep
// their place in untainted.
func (r *reconciler) computeDisconnecting(tg *structs.TaskGroup, disconnecting allocSet, untainted, rescheduleNow *allocSet, du *structs.DesiredUpdates) {
	timeout := r.in.Now.Add(lostAfter(tg))
	list := disconnecting.nameOrder()
	later := make([]delayed, 0, len(list))
	for _, a := range list {
		later = append(later, delayed{alloc: a, at: timeout})
	}
	evalOf := r.batchFollowupEvals(later, EvalTriggerMaxDisconnectTimeout, descDisconnectTimeout)
	for _, a := range list {
		u := a.CopySkipJob()
		u.ClientStatus = structs.AllocClientStatusUnknown
		u.AllocStates = append(u.AllocStates, &structs.AllocState{Field: "ClientStatus",
			Value: structs.AllocClientStatusUnknown, Time: r.in.Now})
		u.FollowupEvalID = evalOf[a.ID]
		r.res.DisconnectUpdates = append(r.res.DisconnectUpdates, u)
		du.Disconnect++
		if replaceOnDisconnect(tg) {
			(*rescheduleNow)[a.ID] = a
		} else {
			(*untainted)[a.ID] = a
		}
	}
}

// delayed is an allocation to act on at a later time.
type delayed struct {
	alloc *structs.Allocation
	at    time.Time
}

// batchWindow groups follow-ups due within it into one evaluation.
const batchWindow = 5 * time.Second

// batchFollowupEvals creates evaluations (WaitUntil set) for allocations
// to act on later, one per batchWindow of due times, and returns each
// allocation's evaluation ID.
func (r *reconciler) batchFollowupEvals(later []delayed, trigger, desc string) map[string]string {
	out := make(map[string]string, len(later))
	if len(later) == 0 {
		return out
	}
	sorted := append([]delayed(nil), later...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].at.Before(sorted[j].at) })
	var eval *structs.Evaluation
	for _, d := range sorted {
		if eval == nil || d.at.Sub(eval.WaitUntil) >= batchWindow {
			now := r.in.Now.UnixNano()
			eval = &structs.Evaluation{
				ID:                r.in.NewID(),
				Namespace:         r.job.Namespace,
				Priority:          r.in.EvalPriority,
				Type:              r.job.Type,
				TriggeredBy:       trigger,
				JobID:             r.job.ID,
				JobModifyIndex:    r.job.JobModifyIndex,
				Status:            structs.EvalStatusPending,
				StatusDescription: desc,
				WaitUntil:         d.at,
				PreviousEval:      r.in.EvalID,
				CreateTime:        now,
				ModifyTime:        now,
			}
			r.res.FollowupEvals = append(r.res.FollowupEvals, eval)
		}
		out[d.alloc.ID] = eval.ID
	}
	return out
}
