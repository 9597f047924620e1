package evalbroker

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/server/clock"
)

// captureClock hands every timer function to the test, which runs it when it
// likes: as if the timer fired and its goroutine was then delayed.
type captureClock struct {
	mu  sync.Mutex
	fns []func()
}

func (c *captureClock) Now() time.Time { return time.Unix(1_000_000, 0) }
func (c *captureClock) AfterFunc(_ time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fns = append(c.fns, f)
	return firedTimer{}
}

func (c *captureClock) AfterFuncAt(_ time.Time, f func()) clock.Timer { return c.AfterFunc(0, f) }

func (c *captureClock) last() func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fns[len(c.fns)-1]
}

type firedTimer struct{}

func (firedTimer) Stop() bool { return false }

func TestStaleNackTimerIsIgnored(t *testing.T) {
	cc := &captureClock{}
	b := New(Config{Clock: cc})
	b.SetEnabled(true)
	defer b.SetEnabled(false)

	// Ack wins the race: the late timer must not re-enqueue the eval.
	b.Enqueue(eval("e1", "web", 50, 1))
	e, tok := mustDequeue(t, b)
	fire := cc.last()
	if err := b.Ack(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	fire()
	if s := b.Stats(); s.TotalReady+s.TotalWaiting+s.TotalUnacked != 0 {
		t.Fatalf("stale nack timer acted after Ack: %+v", s)
	}

	// Pause wins the race: the eval stays outstanding.
	b.Enqueue(eval("e2", "web", 50, 2))
	e, tok = mustDequeue(t, b)
	fire = cc.last()
	if err := b.PauseNackTimeout(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	fire()
	if _, ok := b.Outstanding(e.ID); !ok {
		t.Fatal("stale nack timer nacked a paused eval")
	}

	// OutstandingReset wins the race: same.
	if err := b.ResumeNackTimeout(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	fire = cc.last()
	if err := b.OutstandingReset(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	fire()
	if _, ok := b.Outstanding(e.ID); !ok {
		t.Fatal("stale nack timer nacked a reset eval")
	}
	// The current timer still works.
	cc.last()()
	if _, ok := b.Outstanding(e.ID); ok {
		t.Fatal("current nack timer did not nack")
	}
}

// gapClock is a Fake that moves forward by jump right after the delay
// goroutine reads it, once: the test's Advance landing between the
// goroutine's Now and its arming of the timer.
type gapClock struct {
	*clock.Fake
	mu     sync.Mutex
	jump   time.Duration
	jumped bool
}

func (c *gapClock) Now() time.Time {
	now := c.Fake.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.jump > 0 && calledFrom("runDelayed") {
		c.Fake.Advance(c.jump)
		c.jump, c.jumped = 0, true
	}
	return now
}

func (c *gapClock) armJump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.jump = d
}

func (c *gapClock) hasJumped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.jumped
}

// calledFrom reports whether the caller of Now is the named broker method.
func calledFrom(method string) bool {
	pc, _, _, ok := runtime.Caller(2)
	return ok && strings.HasSuffix(runtime.FuncForPC(pc).Name(), "."+method)
}

// A WaitUntil eval is released at its moment even when the clock moves
// between the delay goroutine reading the time and arming its timer. With
// a timer armed for "WaitUntil minus the time read", the move made it fire
// late by the size of the move (seen as a CI flake of TestWaitAndWaitUntil).
func TestWaitUntilTimerIsAbsolute(t *testing.T) {
	gc := &gapClock{Fake: clock.NewFake(time.Unix(1_000_000, 0))}
	cfg := DefaultConfig()
	cfg.Clock = gc
	b := New(cfg)
	b.SetEnabled(true)
	defer b.SetEnabled(false)
	start := gc.Fake.Now()

	// Park the delay goroutine on a far timer so the next Now it reads is
	// the one after the poke below.
	far := eval("far", "a", 50, 1)
	far.WaitUntil = start.Add(time.Hour)
	b.Enqueue(far)
	eventually(t, "far timer armed", func() bool { return gc.Pending() == 1 })

	gc.armJump(5 * time.Second)
	u := eval("until", "b", 50, 2)
	u.WaitUntil = start.Add(10 * time.Second)
	b.Enqueue(u)
	eventually(t, "the jump", gc.hasJumped)
	_ = b.Stats() // the goroutine arms its timer before releasing the lock
	eventually(t, "timer re-armed", func() bool { return gc.Pending() == 1 })

	gc.Fake.Advance(5 * time.Second) // now start+10s: u is due
	eventually(t, "WaitUntil release", func() bool { return b.Stats().TotalReady == 1 })
	if e, _ := mustDequeue(t, b); e.ID != "until" {
		t.Fatalf("got %s", e.ID)
	}
}

// A clock moved past an eval's WaitUntil while the delay goroutine was
// arming its timer must still release the eval: a fake clock fires a timer
// armed for a past moment only when it is next moved, so the goroutine
// looks at the clock again after arming. (The reconnect model test saw the
// eval held forever under -race.)
func TestDelayedReleaseWhenClockPassesWhileArming(t *testing.T) {
	b, fc := newFake(t)
	for i := 0; i < 2000; i++ {
		e := eval(fmt.Sprintf("until-%d", i), "j", 50, uint64(i+1))
		e.WaitUntil = fc.Now().Add(time.Second)
		b.Enqueue(e)
		// Move the clock at a varying moment of the goroutine's pass.
		for spin := 0; spin < i%64; spin++ {
			runtime.Gosched()
		}
		fc.Advance(time.Second)
		deadline := time.Now().Add(5 * time.Second)
		for b.DueWaiting() > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("iteration %d: the due eval was never released (timers pending: %d)", i, fc.Pending())
			}
			time.Sleep(50 * time.Microsecond)
		}
		got, tok := mustDequeue(t, b)
		if got.ID != e.ID {
			t.Fatalf("dequeued %s, want %s", got.ID, e.ID)
		}
		if err := b.Ack(got.ID, tok); err != nil {
			t.Fatal(err)
		}
	}
}
