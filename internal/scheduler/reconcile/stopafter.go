package reconcile

import (
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// descLostLater describes follow-up evaluations that replace lost
// allocations once their clients have stopped them.
const descLostLater = "created for delayed lost allocation replacement"

// stopAfter is how long a client cut off from the servers keeps the
// group's allocations running before stopping them itself:
// disconnect.stop_on_client_after, or the deprecated
// stop_after_client_disconnect; 0 when it keeps them.
func stopAfter(tg *structs.TaskGroup) time.Duration {
	if tg.Disconnect != nil && tg.Disconnect.StopOnClientAfter != nil {
		return *tg.Disconnect.StopOnClientAfter
	}
	if tg.StopAfterClientDisconnect != nil {
		return *tg.StopAfterClientDisconnect
	}
	return 0
}

// delayByStopAfter returns the lost allocations whose client may still be
// running them, each with the time by which it will have stopped them: the
// time the allocation was marked lost (now, on the pass that marks it) plus
// stop_on_client_after plus the longest kill timeout of its tasks. Their
// replacements wait until then, so the work never runs twice.
func delayByStopAfter(tg *structs.TaskGroup, lost allocSet, now time.Time) []delayed {
	d := stopAfter(tg)
	if d <= 0 {
		return nil
	}
	kill := 5 * time.Second
	for _, t := range tg.Tasks {
		kill = max(kill, t.KillTimeout)
	}
	var out []delayed
	for _, a := range lost.nameOrder() {
		if a.ClientTerminalStatus() && a.ClientStatus != structs.AllocClientStatusLost {
			continue // finished on its own: nothing left to stop
		}
		since := now
		for _, s := range a.AllocStates {
			if s != nil && s.Field == "ClientStatus" && s.Value == structs.AllocClientStatusLost {
				since = s.Time
				break
			}
		}
		if at := since.Add(d + kill); at.After(now) {
			out = append(out, delayed{alloc: a, at: at})
		}
	}
	return out
}

// lostStillStopping reports whether an allocation of the group was stopped
// as lost by an earlier pass and its client may still be running it (the
// stop's time plus stop_on_client_after plus the kill timeout is ahead):
// its replacement waits for the follow-up evaluation that pass created,
// whichever evaluation looks at the group meanwhile. The follow-up itself
// replaces it.
func lostStillStopping(tg *structs.TaskGroup, all allocSet, now time.Time, evalID string) bool {
	d := stopAfter(tg)
	if d <= 0 {
		return false
	}
	kill := 5 * time.Second
	for _, t := range tg.Tasks {
		kill = max(kill, t.KillTimeout)
	}
	for _, a := range all {
		if a.ClientStatus != structs.AllocClientStatusLost || !a.ServerTerminalStatus() || a.NextAllocation != "" ||
			a.FollowupEvalID == "" || a.FollowupEvalID == evalID || a.ModifyTime == 0 {
			continue
		}
		if time.Unix(0, a.ModifyTime).Add(d + kill).After(now) {
			return true
		}
	}
	return false
}
