package structs

import "time"

// Reschedule delay functions (reschedule { delay_function }).
const (
	DelayFunctionConstant    = "constant"
	DelayFunctionExponential = "exponential"
	DelayFunctionFibonacci   = "fibonacci"
)

// LastRescheduleFailedToPlace is RescheduleTracker.LastReschedule when the
// replacement of a failed allocation could not be placed: the allocation
// stays eligible even after the server asked it to stop.
const LastRescheduleFailedToPlace = "failed"

// RescheduleTracker is the history of reschedules that led to an
// allocation: the replacement of a failed allocation inherits its
// predecessor's events plus one for the reschedule that created it.
// Its JSON is a superset of api.RescheduleTracker (events carry Delay, as
// Nomad's servers send them).
type RescheduleTracker struct {
	Events         []*RescheduleEvent
	LastReschedule string
}

// RescheduleEvent is one reschedule: when it happened, which allocation on
// which node failed, and the delay the policy applied before replacing it.
type RescheduleEvent struct {
	_struct struct{} `codec:",omitempty"` // msgpack omits zero fields: see msgpack_tags.go

	RescheduleTime int64 // unix nanoseconds
	PrevAllocID    string
	PrevNodeID     string
	Delay          time.Duration
}

// Copy returns a deep copy of the tracker.
func (t *RescheduleTracker) Copy() *RescheduleTracker {
	if t == nil {
		return nil
	}
	out := &RescheduleTracker{LastReschedule: t.LastReschedule, Events: make([]*RescheduleEvent, 0, len(t.Events))}
	for _, ev := range t.Events {
		if ev != nil {
			c := *ev
			out.Events = append(out.Events, &c)
		}
	}
	return out
}

// RescheduleDelay is the delay before the next reschedule under p, given
// the reschedules so far (t may be nil). constant: always p.Delay.
// exponential: p.Delay, then twice the previous delay. fibonacci: p.Delay
// twice, then the sum of the previous two delays. Both grow to at most
// p.MaxDelay when it is set. Events recorded without a delay count as
// p.Delay.
func RescheduleDelay(p *ReschedulePolicy, t *RescheduleTracker) time.Duration {
	if p == nil {
		return 0
	}
	var prev []time.Duration
	if t != nil {
		for _, ev := range t.Events {
			if ev == nil {
				continue
			}
			d := ev.Delay
			if d <= 0 {
				d = p.Delay
			}
			prev = append(prev, d)
		}
	}
	n := len(prev)
	d := p.Delay
	switch p.DelayFunction {
	case DelayFunctionExponential:
		if n > 0 {
			d = 2 * prev[n-1]
		}
	case DelayFunctionFibonacci:
		if n > 1 {
			d = prev[n-1] + prev[n-2]
		}
	}
	if d < 0 { // overflow after very many doublings
		d = p.MaxDelay
	}
	if p.MaxDelay > 0 && d > p.MaxDelay {
		d = p.MaxDelay
	}
	return d
}

// AllocRescheduleDelay is the delay before replacing the failed allocation
// a: RescheduleDelay, except that a growing delay that reached max_delay
// starts again from p.Delay when a ran for longer than max_delay since its
// own reschedule (it was healthy for a while; the failure is a new one).
// This is the Delay recorded in the replacement's reschedule event.
func AllocRescheduleDelay(a *Allocation, p *ReschedulePolicy, now time.Time) time.Duration {
	d := RescheduleDelay(p, a.RescheduleTracker)
	if p == nil || p.MaxDelay <= 0 || d < p.MaxDelay || p.DelayFunction == DelayFunctionConstant {
		return d
	}
	if t := a.RescheduleTracker; t != nil && len(t.Events) > 0 && t.Events[len(t.Events)-1] != nil {
		last := time.Unix(0, t.Events[len(t.Events)-1].RescheduleTime)
		if AllocFailTime(a, now).Sub(last) > p.MaxDelay {
			return p.Delay
		}
	}
	return d
}

// AllocFailTime is when allocation a failed: the latest FinishedAt of its
// tasks, else its ModifyTime, else now.
func AllocFailTime(a *Allocation, now time.Time) time.Time {
	var last time.Time
	for _, ts := range a.TaskStates {
		if ts != nil && ts.FinishedAt.After(last) {
			last = ts.FinishedAt
		}
	}
	if !last.IsZero() {
		return last
	}
	if a.ModifyTime > 0 {
		return time.Unix(0, a.ModifyTime)
	}
	return now
}

// NextRescheduleTime says when the failed (or lost) allocation a may be
// replaced under policy p and whether it may be replaced at all: its fail
// time plus AllocRescheduleDelay, eligible when the policy is unlimited or
// fewer than p.Attempts reschedules happened within p.Interval before the
// failure (and the delay fits in that interval). An allocation the server
// stopped is not eligible unless its own replacement failed to place.
func NextRescheduleTime(a *Allocation, p *ReschedulePolicy, now time.Time) (when time.Time, eligible bool) {
	if a == nil || p == nil || (!p.Unlimited && p.Attempts <= 0) {
		return time.Time{}, false
	}
	if a.ClientStatus != AllocClientStatusFailed && a.ClientStatus != AllocClientStatusLost {
		return time.Time{}, false
	}
	if a.DesiredStatus == AllocDesiredStatusStop &&
		(a.RescheduleTracker == nil || a.RescheduleTracker.LastReschedule != LastRescheduleFailedToPlace) {
		return time.Time{}, false
	}
	failed := AllocFailTime(a, now)
	delay := AllocRescheduleDelay(a, p, now)
	when = failed.Add(delay)
	if p.Unlimited {
		return when, true
	}
	attempts := 0
	if a.RescheduleTracker != nil {
		for _, ev := range a.RescheduleTracker.Events {
			if ev == nil {
				continue
			}
			if p.Interval <= 0 || failed.Sub(time.Unix(0, ev.RescheduleTime)) < p.Interval {
				attempts++
			}
		}
	}
	eligible = attempts < p.Attempts && (p.Interval <= 0 || attempts == 0 || delay < p.Interval)
	return when, eligible
}

// maxUnlimitedRescheduleEvents bounds the history an unlimited policy keeps:
// enough for the delay functions, not a list that grows forever.
const maxUnlimitedRescheduleEvents = 5

// NextRescheduleTracker is the tracker the replacement of the failed
// allocation a carries: a's events that still matter (within the policy's
// interval; the last few for an unlimited policy) followed by this
// reschedule, with the delay applied.
func NextRescheduleTracker(a *Allocation, p *ReschedulePolicy, now time.Time) *RescheduleTracker {
	t := &RescheduleTracker{}
	if a.RescheduleTracker != nil {
		for _, ev := range a.RescheduleTracker.Copy().Events {
			if p != nil && !p.Unlimited && p.Interval > 0 && now.Sub(time.Unix(0, ev.RescheduleTime)) >= p.Interval {
				continue
			}
			t.Events = append(t.Events, ev)
		}
		if p != nil && p.Unlimited && len(t.Events) > maxUnlimitedRescheduleEvents-1 {
			t.Events = t.Events[len(t.Events)-(maxUnlimitedRescheduleEvents-1):]
		}
	}
	t.Events = append(t.Events, &RescheduleEvent{
		RescheduleTime: now.UnixNano(), PrevAllocID: a.ID, PrevNodeID: a.NodeID,
		Delay: AllocRescheduleDelay(a, p, now),
	})
	return t
}

// ReschedulePolicyOf is the policy that governs the named group's
// allocations: the group's, else the job's (a job canonicalized at
// admission always has the group's filled in; nil for system jobs).
func ReschedulePolicyOf(j *Job, group string) *ReschedulePolicy {
	if tg := j.LookupTaskGroup(group); tg != nil && tg.ReschedulePolicy != nil {
		return tg.ReschedulePolicy
	}
	if j == nil {
		return nil
	}
	return j.Reschedule
}
