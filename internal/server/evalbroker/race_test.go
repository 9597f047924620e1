package evalbroker

import (
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
