package structs

import (
	"testing"
	"time"
)

var rsNow = time.Unix(1_800_000_000, 0)

// trackerOf builds a tracker whose events carry the given delays, one
// minute apart, ending a minute before rsNow.
func trackerOf(delays ...time.Duration) *RescheduleTracker {
	t := &RescheduleTracker{}
	for i, d := range delays {
		at := rsNow.Add(-time.Duration(len(delays)-i) * time.Minute)
		t.Events = append(t.Events, &RescheduleEvent{RescheduleTime: at.UnixNano(), PrevAllocID: "p", Delay: d})
	}
	return t
}

func TestRescheduleDelay(t *testing.T) {
	s := time.Second
	exp := &ReschedulePolicy{Delay: 30 * s, DelayFunction: DelayFunctionExponential, MaxDelay: time.Hour, Unlimited: true}
	fib := &ReschedulePolicy{Delay: 5 * s, DelayFunction: DelayFunctionFibonacci, MaxDelay: 50 * s, Unlimited: true}
	con := &ReschedulePolicy{Delay: 5 * s, DelayFunction: DelayFunctionConstant, Attempts: 3, Interval: time.Hour}
	cases := []struct {
		name string
		p    *ReschedulePolicy
		t    *RescheduleTracker
		want time.Duration
	}{
		{"no policy", nil, nil, 0},
		{"constant first", con, nil, 5 * s},
		{"constant later", con, trackerOf(5*s, 5*s), 5 * s},
		{"exponential first", exp, nil, 30 * s},
		{"exponential second", exp, trackerOf(30 * s), 60 * s},
		{"exponential third", exp, trackerOf(30*s, 60*s), 120 * s},
		{"exponential capped", exp, trackerOf(40 * time.Minute), time.Hour},
		{"exponential at cap stays", exp, trackerOf(time.Hour), time.Hour},
		{"exponential event without delay", exp, trackerOf(0), 60 * s},
		{"fibonacci first", fib, nil, 5 * s},
		{"fibonacci second", fib, trackerOf(5 * s), 5 * s},
		{"fibonacci third", fib, trackerOf(5*s, 5*s), 10 * s},
		{"fibonacci fourth", fib, trackerOf(5*s, 5*s, 10*s), 15 * s},
		{"fibonacci fifth", fib, trackerOf(5*s, 10*s, 15*s), 25 * s},
		{"fibonacci capped", fib, trackerOf(25*s, 40*s), 50 * s},
		{"unknown function is constant", &ReschedulePolicy{Delay: 7 * s}, trackerOf(7 * s), 7 * s},
		{"no max delay", &ReschedulePolicy{Delay: s, DelayFunction: DelayFunctionExponential}, trackerOf(time.Hour), 2 * time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := RescheduleDelay(tc.p, tc.t); got != tc.want {
				t.Fatalf("RescheduleDelay = %s, want %s", got, tc.want)
			}
		})
	}
}

func failedAlloc(finished time.Time, tracker *RescheduleTracker) *Allocation {
	a := &Allocation{ID: "a1", NodeID: "n1", ClientStatus: AllocClientStatusFailed, DesiredStatus: AllocDesiredStatusRun,
		RescheduleTracker: tracker, ModifyTime: rsNow.Add(-time.Hour).UnixNano()}
	if !finished.IsZero() {
		a.TaskStates = map[string]*TaskState{
			"web":  {State: "dead", Failed: true, FinishedAt: finished},
			"side": {State: "dead", FinishedAt: finished.Add(-10 * time.Second)},
		}
	}
	return a
}

func TestNextRescheduleTime(t *testing.T) {
	s := time.Second
	service := DefaultReschedulePolicy(JobTypeService)
	batch := DefaultReschedulePolicy(JobTypeBatch)
	failedAt := rsNow.Add(-2 * s)
	old := func(ago time.Duration) *RescheduleTracker {
		return &RescheduleTracker{Events: []*RescheduleEvent{{RescheduleTime: failedAt.Add(-ago).UnixNano(), Delay: 5 * s}}}
	}
	cases := []struct {
		name     string
		a        *Allocation
		p        *ReschedulePolicy
		when     time.Time
		eligible bool
	}{
		{"service first failure", failedAlloc(failedAt, nil), service, failedAt.Add(30 * s), true},
		{"service grows", failedAlloc(failedAt, trackerOf(30*s, 60*s)), service, failedAt.Add(120 * s), true},
		{"service unlimited", failedAlloc(failedAt, trackerOf(30*s, 60*s, 120*s, 240*s, 480*s, 960*s)), service, failedAt.Add(1920 * s), true},
		{"batch first failure", failedAlloc(failedAt, nil), batch, failedAt.Add(5 * s), true},
		{"batch out of attempts within a day", failedAlloc(failedAt, old(time.Hour)), batch, failedAt.Add(5 * s), false},
		{"batch attempt a day ago no longer counts", failedAlloc(failedAt, old(25*time.Hour)), batch, failedAt.Add(5 * s), true},
		{"two of three attempts used", failedAlloc(failedAt, trackerOf(5*s, 5*s)),
			&ReschedulePolicy{Attempts: 3, Interval: time.Hour, Delay: 5 * s, DelayFunction: DelayFunctionConstant}, failedAt.Add(5 * s), true},
		{"three of three attempts used", failedAlloc(failedAt, trackerOf(5*s, 5*s, 5*s)),
			&ReschedulePolicy{Attempts: 3, Interval: time.Hour, Delay: 5 * s, DelayFunction: DelayFunctionConstant}, failedAt.Add(5 * s), false},
		{"delay longer than interval", failedAlloc(failedAt, trackerOf(40*s)),
			&ReschedulePolicy{Attempts: 5, Interval: time.Minute, Delay: 40 * s, DelayFunction: DelayFunctionExponential}, failedAt.Add(80 * s), false},
		{"no task finished: modify time", failedAlloc(time.Time{}, nil), batch, rsNow.Add(-time.Hour + 5*s), true},
		{"system job has no policy", failedAlloc(failedAt, nil), nil, time.Time{}, false},
		{"zero policy", failedAlloc(failedAt, nil), &ReschedulePolicy{Delay: s}, time.Time{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			when, ok := NextRescheduleTime(tc.a, tc.p, rsNow)
			if ok != tc.eligible || !when.Equal(tc.when) {
				t.Fatalf("NextRescheduleTime = (%s, %v), want (%s, %v)", when, ok, tc.when, tc.eligible)
			}
		})
	}
}

func TestNextRescheduleTimeStatus(t *testing.T) {
	p := DefaultReschedulePolicy(JobTypeService)
	running := failedAlloc(rsNow, nil)
	running.ClientStatus = AllocClientStatusRunning
	complete := failedAlloc(rsNow, nil)
	complete.ClientStatus = AllocClientStatusComplete
	stopped := failedAlloc(rsNow, nil)
	stopped.DesiredStatus = AllocDesiredStatusStop
	for name, a := range map[string]*Allocation{"running": running, "complete": complete, "server-stopped": stopped} {
		if _, ok := NextRescheduleTime(a, p, rsNow); ok {
			t.Errorf("%s allocation is eligible for rescheduling", name)
		}
	}
	lost := failedAlloc(rsNow, nil)
	lost.ClientStatus = AllocClientStatusLost
	if _, ok := NextRescheduleTime(lost, p, rsNow); !ok {
		t.Error("lost allocation is not eligible")
	}
	stopped.RescheduleTracker = &RescheduleTracker{LastReschedule: LastRescheduleFailedToPlace}
	if _, ok := NextRescheduleTime(stopped, p, rsNow); !ok {
		t.Error("allocation whose replacement failed to place is not eligible")
	}
}

// A delay that grew to max_delay starts over once the allocation ran for
// longer than max_delay before failing again.
func TestAllocRescheduleDelayResets(t *testing.T) {
	p := &ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: DelayFunctionExponential, MaxDelay: 10 * time.Minute, Unlimited: true}
	lastAt := rsNow.Add(-time.Hour)
	tr := &RescheduleTracker{Events: []*RescheduleEvent{{RescheduleTime: lastAt.UnixNano(), Delay: 8 * time.Minute}}}
	if got := AllocRescheduleDelay(failedAlloc(lastAt.Add(5*time.Minute), tr), p, rsNow); got != 10*time.Minute {
		t.Fatalf("failed soon after its reschedule: delay %s, want the max 10m", got)
	}
	if got := AllocRescheduleDelay(failedAlloc(lastAt.Add(30*time.Minute), tr), p, rsNow); got != 30*time.Second {
		t.Fatalf("failed after running 30m: delay %s, want it reset to 30s", got)
	}
	when, ok := NextRescheduleTime(failedAlloc(lastAt.Add(30*time.Minute), tr), p, rsNow)
	if !ok || !when.Equal(lastAt.Add(30*time.Minute+30*time.Second)) {
		t.Fatalf("NextRescheduleTime after reset = (%s, %v)", when, ok)
	}
}

func TestNextRescheduleTracker(t *testing.T) {
	p := DefaultReschedulePolicy(JobTypeService)
	prev := failedAlloc(rsNow, trackerOf(30*time.Second, 60*time.Second))
	got := NextRescheduleTracker(prev, p, rsNow)
	if len(got.Events) != 3 {
		t.Fatalf("events = %d, want 3", len(got.Events))
	}
	last := got.Events[2]
	if last.Delay != 120*time.Second || last.PrevAllocID != "a1" || last.PrevNodeID != "n1" || last.RescheduleTime != rsNow.UnixNano() {
		t.Fatalf("new event = %+v", last)
	}
	if len(prev.RescheduleTracker.Events) != 2 {
		t.Fatal("the previous allocation's tracker was modified")
	}

	// Unlimited keeps a bounded history; limited keeps the interval's.
	long := failedAlloc(rsNow, trackerOf(1, 2, 3, 4, 5, 6, 7, 8))
	if n := len(NextRescheduleTracker(long, p, rsNow).Events); n != 5 {
		t.Fatalf("unlimited history = %d events, want 5", n)
	}
	batch := &ReschedulePolicy{Attempts: 3, Interval: 90 * time.Second, Delay: time.Second, DelayFunction: DelayFunctionConstant}
	if n := len(NextRescheduleTracker(long, batch, rsNow).Events); n != 2 {
		t.Fatalf("limited history = %d events, want the one within the interval plus the new one", n)
	}
}

// Server-side canonicalization (jobs arriving over RPC without the api
// client's defaults) gives groups the job-level policy, else the type's
// default.
func TestJobCanonicalizeReschedulePolicy(t *testing.T) {
	jobLevel := &ReschedulePolicy{Attempts: 2, Interval: time.Hour, Delay: time.Second, DelayFunction: "constant"}
	j := &Job{ID: "j", Type: "batch", Reschedule: jobLevel,
		TaskGroups: []*TaskGroup{{Name: "a"}, {Name: "b", ReschedulePolicy: &ReschedulePolicy{Attempts: 9}}}}
	j.Canonicalize()
	if got := j.TaskGroups[0].ReschedulePolicy; got == nil || *got != *jobLevel || got == jobLevel {
		t.Fatalf("group without a block: %+v, want a copy of the job's %+v", got, jobLevel)
	}
	if got := j.TaskGroups[1].ReschedulePolicy; got.Attempts != 9 {
		t.Fatalf("group's own block replaced: %+v", got)
	}
	sys := &Job{ID: "s", Type: "system", TaskGroups: []*TaskGroup{{Name: "a"}}}
	sys.Canonicalize()
	if p := sys.TaskGroups[0].ReschedulePolicy; p != nil {
		t.Fatalf("system group got a reschedule policy: %+v", p)
	}
	if p := DefaultReschedulePolicy(JobTypeSysBatch); p != nil {
		t.Fatalf("sysbatch default policy: %+v", p)
	}
}
