package reconcile

import (
	"sort"
	"time"

	"github.com/hashicorp/nomad/api"

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

// replaceOnDisconnect is disconnect.replace (default true), or the
// negation of the deprecated prevent_reschedule_on_lost (a job submitted
// through the API keeps the old key; the jobspec parser translates it).
func replaceOnDisconnect(tg *structs.TaskGroup) bool {
	if tg.Disconnect != nil && tg.Disconnect.Replace != nil {
		return *tg.Disconnect.Replace
	}
	return !tg.PreventRescheduleOnLost
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

// computeReconnecting settles allocations whose node came back. A failed
// or stopped original is stopped and its replacement kept. Otherwise the
// group's disconnect.reconcile picks between the original and each live
// replacement: a replacement on a newer job version always wins; then
// keep_original, keep_replacement, longest_running (the one whose tasks
// started first) or best_score (the higher placement score on its node;
// the default); a replacement that is not running yet never wins over a
// running original. Losers are stopped; a kept original rejoins untainted and
// is sent as a reconnect update.
func (r *reconciler) computeReconnecting(tg *structs.TaskGroup, untainted, reconnecting *allocSet, all allocSet, du *structs.DesiredUpdates) {
	replacementsOf := make(map[string][]*structs.Allocation)
	for _, a := range all.nameOrder() {
		if a.PreviousAllocation != "" && !a.TerminalStatus() {
			replacementsOf[a.PreviousAllocation] = append(replacementsOf[a.PreviousAllocation], a)
		}
	}
	strategy := api.ReconcileOptionBestScore
	if tg.Disconnect != nil && tg.Disconnect.Reconcile != nil && *tg.Disconnect.Reconcile != "" {
		strategy = *tg.Disconnect.Reconcile
	}
	stop := func(a *structs.Allocation) {
		r.res.Stop = append(r.res.Stop, Stop{Alloc: a, Description: DescReconnected})
		du.Stop++
	}
	for _, orig := range reconnecting.nameOrder() {
		if orig.DesiredStatus != structs.AllocDesiredStatusRun || orig.ClientStatus == structs.AllocClientStatusFailed ||
			boolSet(orig.DesiredTransition.Migrate) {
			if !orig.ServerTerminalStatus() {
				stop(orig)
			}
			delete(*reconnecting, orig.ID)
			continue
		}
		keepOrig := true
		for _, repl := range replacementsOf[orig.ID] {
			if pickReplacement(strategy, orig, repl) {
				keepOrig = false
				continue
			}
			stop(repl)
			delete(*untainted, repl.ID)
		}
		if !keepOrig {
			stop(orig)
			delete(*reconnecting, orig.ID)
			continue
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

// stopFailedReplacements stops, rather than reschedules, a replacement
// that failed while its original was disconnected, once the original is
// back and running: the original holds the name again. Rescheduled, the
// failed replacement would count toward the group beside it, and the pass
// would stop another name's allocation as one too many.
func (r *reconciler) stopFailedReplacements(untainted, reconnecting allocSet, du *structs.DesiredUpdates) {
	for id, a := range untainted {
		if a.ClientStatus != structs.AllocClientStatusFailed || a.PreviousAllocation == "" || a.ServerTerminalStatus() {
			continue
		}
		orig, ok := reconnecting[a.PreviousAllocation]
		if !ok || orig.ClientStatus != structs.AllocClientStatusRunning || orig.DesiredStatus != structs.AllocDesiredStatusRun {
			continue
		}
		r.res.Stop = append(r.res.Stop, Stop{Alloc: a, Description: DescReconnected})
		du.Stop++
		delete(untainted, id)
	}
}

// pickReplacement reports whether repl, rather than the reconnected orig,
// is the one to keep.
func pickReplacement(strategy string, orig, repl *structs.Allocation) bool {
	if orig.Job != nil && repl.Job != nil && olderVersion(orig, repl.Job) {
		return true
	}
	if orig.ClientStatus == structs.AllocClientStatusRunning && repl.ClientStatus != structs.AllocClientStatusRunning {
		// A replacement that has not started (its own client may be
		// silent) never wins over the running original: stopping the
		// original for it would leave the name with no running copy.
		return false
	}
	switch strategy {
	case api.ReconcileOptionKeepReplacement:
		return true
	case api.ReconcileOptionLongestRunning:
		o, p := startedAt(orig), startedAt(repl)
		return !p.IsZero() && (o.IsZero() || p.Before(o))
	case api.ReconcileOptionBestScore:
		return nodeScore(repl) > nodeScore(orig)
	}
	return false
}

// startedAt is when the allocation's first task started (zero if none has).
func startedAt(a *structs.Allocation) time.Time {
	var first time.Time
	for _, ts := range a.TaskStates {
		if ts != nil && !ts.StartedAt.IsZero() && (first.IsZero() || ts.StartedAt.Before(first)) {
			first = ts.StartedAt
		}
	}
	return first
}

// nodeScore is the normalized score the allocation's node had when it was
// placed (0 when unknown).
func nodeScore(a *structs.Allocation) float64 {
	if a.Metrics == nil {
		return 0
	}
	for _, m := range a.Metrics.ScoreMetaData {
		if m != nil && m.NodeID == a.NodeID {
			return m.NormScore
		}
	}
	return 0
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
