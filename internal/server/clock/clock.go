// Package clock is the time source of the leader-only components (eval broker,
// heartbeat timers). Production code uses Real; tests use Fake, whose time only
// moves when the test calls Advance, so timer-driven behaviour is tested
// without sleeping.
//
// This package must never block its callers beyond running a due timer's
// function (Fake.Advance) and must never do I/O.
package clock

import (
	"sync"
	"time"
)

// Timer is a scheduled call that can be cancelled.
type Timer interface {
	// Stop cancels the call. It reports whether the call was stopped before
	// it ran. Callers must not rely on Stop alone to avoid a racing call:
	// the function may already be running.
	Stop() bool
}

// Clock tells the time and schedules calls.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine (Real) or from Advance (Fake)
	// once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
	// AfterFuncAt calls f once the clock reads at or later. Callers waiting
	// for an absolute moment use it rather than AfterFunc(at.Sub(Now())):
	// the clock may move between reading Now and arming the timer, and a
	// Fake moved by a test in that gap would fire the timer late.
	AfterFuncAt(at time.Time, f func()) Timer
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// AfterFuncAt wraps time.AfterFunc with the time left until at.
func (Real) AfterFuncAt(at time.Time, f func()) Timer { return time.AfterFunc(time.Until(at), f) }

// Fake is a manually advanced clock. The zero value is not usable; use NewFake.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers map[*fakeTimer]struct{}
}

type fakeTimer struct {
	c    *Fake
	at   time.Time
	seq  uint64
	f    func()
	done bool
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, timers: make(map[*fakeTimer]struct{})}
}

// Now returns the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f at Now()+d. A non-positive d fires on the next Advance
// (including Advance(0)).
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.armLocked(c.now.Add(d), f)
}

// AfterFuncAt schedules f at the fake time at. A time not after Now() fires
// on the next Advance (including Advance(0)).
func (c *Fake) AfterFuncAt(at time.Time, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.armLocked(at, f)
}

func (c *Fake) armLocked(at time.Time, f func()) *fakeTimer {
	c.seq++
	t := &fakeTimer{c: c, at: at, seq: c.seq, f: f}
	c.timers[t] = struct{}{}
	return t
}

// Pending reports how many timers are armed.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Advance moves time forward by d and runs every timer that becomes due, in
// order of due time, synchronously and without holding the clock's lock. Time
// steps to each timer's due time before its function runs, so a timer armed by
// a timer's function is scheduled from that moment and fires within the same
// Advance if it is due by the end.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var next *fakeTimer
		for t := range c.timers {
			if t.at.After(end) {
				continue
			}
			if next == nil || t.at.Before(next.at) || (t.at.Equal(next.at) && t.seq < next.seq) {
				next = t
			}
		}
		if next == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		if next.at.After(c.now) {
			c.now = next.at
		}
		delete(c.timers, next)
		next.done = true
		c.mu.Unlock()
		next.f()
	}
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	delete(t.c.timers, t)
	return true
}
