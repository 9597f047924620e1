// Package periodic is the leader-only periodic dispatcher: it keeps every
// periodic parent job in a heap ordered by its next launch (computed from
// its cron specs in its time zone) and, when a launch is due, calls the
// server's launch function, which derives the child job and registers it
// through Raft.
//
// It holds only in-memory state rebuilt from the state store when leadership
// is gained (Restore catches up launches missed during the change) and
// dropped when it is lost (SetEnabled(false)). Add and Remove are called from
// the FSM's event sink and must never block: they take one short lock and
// never call the launch function. Time comes from an injected clock.
//
// It must never write to Raft itself or read the state store: the launch
// function does both.
package periodic

import (
	"container/heap"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/server/clock"
	"github.com/drover-project/drover/internal/structs"
)

// LaunchFunc launches the child of a periodic parent for launch time t. It
// runs without the dispatcher's lock, on the timer's goroutine (or Restore's
// caller); it may block on Raft.
type LaunchFunc func(job *structs.Job, t time.Time) error

// ChildRunningFunc reports whether a periodic parent has a child that is
// not dead yet (prohibit_overlap).
type ChildRunningFunc func(job *structs.Job) (bool, error)

// Config configures a Dispatcher.
type Config struct {
	Clock        clock.Clock // nil: the wall clock
	Launch       LaunchFunc
	ChildRunning ChildRunningFunc // nil: never running
	Logger       hclog.Logger
}

// Dispatcher schedules periodic launches. The zero value is not usable; use
// New. It starts disabled.
type Dispatcher struct {
	clock   clock.Clock
	launch  LaunchFunc
	running ChildRunningFunc
	logger  hclog.Logger

	mu      sync.Mutex
	enabled bool
	tracked map[structs.NamespacedID]*entry
	queue   launchHeap
	timer   clock.Timer
}

type entry struct {
	job   *structs.Job
	next  time.Time
	index int // position in the heap
}

// New returns a disabled dispatcher.
func New(cfg Config) *Dispatcher {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.ChildRunning == nil {
		cfg.ChildRunning = func(*structs.Job) (bool, error) { return false, nil }
	}
	return &Dispatcher{clock: cfg.Clock, launch: cfg.Launch, running: cfg.ChildRunning, logger: cfg.Logger,
		tracked: make(map[structs.NamespacedID]*entry)}
}

// SetEnabled turns the dispatcher on (leader) or off. Turning it off drops
// every tracked job and stops the timer.
func (d *Dispatcher) SetEnabled(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.enabled = on
	if !on {
		d.tracked = make(map[structs.NamespacedID]*entry)
		d.queue = nil
		d.stopTimerLocked()
	}
}

// Enabled reports whether the dispatcher runs.
func (d *Dispatcher) Enabled() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.enabled
}

// Add tracks job (or updates it) if it is an enabled, running periodic
// parent, and forgets it otherwise. It is a no-op while disabled.
func (d *Dispatcher) Add(job *structs.Job) {
	if job == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.enabled {
		return
	}
	d.addLocked(job, d.clock.Now())
}

func (d *Dispatcher) addLocked(job *structs.Job, now time.Time) bool {
	key := job.NamespacedID()
	if !job.IsPeriodic() || job.Stop || job.ParentID != "" {
		d.removeLocked(key)
		return false
	}
	next, err := structs.NextPeriodicLaunch(job.Periodic, now)
	if err != nil || next.IsZero() {
		if err != nil {
			d.logger.Warn("not tracking periodic job", "job", key.String(), "error", err)
		}
		d.removeLocked(key)
		return false
	}
	if e, ok := d.tracked[key]; ok {
		e.job, e.next = job, next
		heap.Fix(&d.queue, e.index)
	} else {
		e := &entry{job: job, next: next}
		d.tracked[key] = e
		heap.Push(&d.queue, e)
	}
	d.rearmLocked()
	return true
}

// Remove forgets a job. It is a no-op while disabled.
func (d *Dispatcher) Remove(namespace, id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.enabled {
		return
	}
	d.removeLocked(structs.NamespacedID{Namespace: namespace, ID: id})
	d.rearmLocked()
}

func (d *Dispatcher) removeLocked(key structs.NamespacedID) {
	if e, ok := d.tracked[key]; ok {
		heap.Remove(&d.queue, e.index)
		delete(d.tracked, key)
	}
}

// Restore tracks job after a leadership change. lastLaunch is the last
// launch recorded in state (zero if none). If the launch that should have
// followed it is already past, the child is launched now, once: launches
// missed while no leader ran are caught up, not replayed one by one. It
// reports whether it launched.
func (d *Dispatcher) Restore(job *structs.Job, lastLaunch time.Time) (bool, error) {
	d.mu.Lock()
	if !d.enabled {
		d.mu.Unlock()
		return false, nil
	}
	now := d.clock.Now()
	if !d.addLocked(job, now) {
		d.mu.Unlock()
		return false, nil
	}
	d.mu.Unlock()
	if lastLaunch.IsZero() {
		return false, nil
	}
	missed, err := structs.NextPeriodicLaunch(job.Periodic, lastLaunch)
	if err != nil || missed.IsZero() || !missed.Before(now) {
		return false, err
	}
	d.logger.Info("launching periodic job missed during leader change", "job", job.NamespacedID().String(),
		"last_launch", lastLaunch, "missed", missed)
	return d.launchUnlessOverlap(job, now)
}

// launchUnlessOverlap launches job at t unless prohibit_overlap holds it
// back. It reports whether it launched.
func (d *Dispatcher) launchUnlessOverlap(job *structs.Job, t time.Time) (bool, error) {
	if p := job.Periodic; p != nil && p.ProhibitOverlap != nil && *p.ProhibitOverlap {
		running, err := d.running(job)
		if err != nil {
			return false, err
		}
		if running {
			d.logger.Debug("skipping periodic launch: a previous child is still running", "job", job.NamespacedID().String(), "launch", t)
			return false, nil
		}
	}
	if err := d.launch(job, t); err != nil {
		return false, err
	}
	return true, nil
}

// NextLaunch returns when a tracked job launches next.
func (d *Dispatcher) NextLaunch(namespace, id string) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.tracked[structs.NamespacedID{Namespace: namespace, ID: id}]
	if !ok {
		return time.Time{}, false
	}
	return e.next, true
}

// Tracked returns the tracked jobs in (namespace, ID) order.
func (d *Dispatcher) Tracked() []*structs.Job {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*structs.Job, 0, len(d.tracked))
	for _, e := range d.tracked {
		out = append(out, e.job)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NamespacedID().String() < out[j].NamespacedID().String() })
	return out
}

func (d *Dispatcher) stopTimerLocked() {
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
}

// rearmLocked points the single timer at the earliest launch.
func (d *Dispatcher) rearmLocked() {
	d.stopTimerLocked()
	if !d.enabled || len(d.queue) == 0 {
		return
	}
	d.timer = d.clock.AfterFuncAt(d.queue[0].next, d.fire)
}

type due struct {
	job *structs.Job
	at  time.Time
}

// fire launches every due job, then schedules each one's next launch from
// now (a clock jump launches once, not once per missed slot).
func (d *Dispatcher) fire() {
	d.mu.Lock()
	if !d.enabled {
		d.mu.Unlock()
		return
	}
	now := d.clock.Now()
	var launches []due
	for len(d.queue) > 0 && !d.queue[0].next.After(now) {
		e := d.queue[0]
		launches = append(launches, due{job: e.job, at: e.next})
		next, err := structs.NextPeriodicLaunch(e.job.Periodic, now)
		if err != nil || next.IsZero() {
			d.removeLocked(e.job.NamespacedID())
			continue
		}
		e.next = next
		heap.Fix(&d.queue, e.index)
	}
	d.rearmLocked()
	d.mu.Unlock()

	for _, l := range launches {
		if _, err := d.launchUnlessOverlap(l.job, l.at); err != nil {
			d.logger.Error("periodic launch failed", "job", l.job.NamespacedID().String(), "launch", l.at, "error", err)
		}
	}
}

// launchHeap orders entries by next launch, then key (determinism).
type launchHeap []*entry

func (h launchHeap) Len() int { return len(h) }
func (h launchHeap) Less(i, j int) bool {
	if !h[i].next.Equal(h[j].next) {
		return h[i].next.Before(h[j].next)
	}
	return h[i].job.NamespacedID().String() < h[j].job.NamespacedID().String()
}
func (h launchHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *launchHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *launchHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}
