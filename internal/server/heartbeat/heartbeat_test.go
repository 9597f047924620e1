package heartbeat

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/server/clock"
)

type recorder struct {
	mu  sync.Mutex
	got map[string]int
	ch  chan string
}

func newRecorder() *recorder { return &recorder{got: map[string]int{}, ch: make(chan string, 100)} }

func (r *recorder) expire(id string) {
	r.mu.Lock()
	r.got[id]++
	r.mu.Unlock()
	r.ch <- id
}

func (r *recorder) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[id]
}

func (r *recorder) waitFor(t *testing.T, id string) {
	t.Helper()
	select {
	case got := <-r.ch:
		if got != id {
			t.Fatalf("expired %q, want %q", got, id)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%q did not expire", id)
	}
}

// assertNone checks no expiry arrives; the callbacks run in goroutines
// started synchronously from Advance, so a short window suffices.
func (r *recorder) assertNone(t *testing.T) {
	t.Helper()
	select {
	case got := <-r.ch:
		t.Fatalf("unexpected expiry of %q", got)
	case <-time.After(50 * time.Millisecond):
	}
}

func setup(randVal float64) (*Timers, *clock.Fake, *recorder) {
	fc := clock.NewFake(time.Unix(1000, 0))
	r := newRecorder()
	cfg := DefaultConfig()
	cfg.Clock = fc
	cfg.Rand = func() float64 { return randVal }
	h := New(cfg, r.expire)
	h.SetEnabled(true)
	return h, fc, r
}

func TestTTLFormula(t *testing.T) {
	h, _, _ := setup(0)
	if ttl := h.Reset("n0"); ttl != 10*time.Second {
		t.Fatalf("small cluster ttl = %v, want MinTTL 10s", ttl)
	}
	// 1000 other timers at 50/s → 20s before jitter.
	for i := 0; i < 1000; i++ {
		h.Reset(fmt.Sprintf("node-%d", i))
	}
	if ttl := h.Reset("n0"); ttl != 20*time.Second {
		t.Fatalf("1001 nodes ttl = %v, want 20s", ttl)
	}
	h.SetMaxPerSecond(100)
	if ttl := h.Reset("n0"); ttl != 10*time.Second {
		t.Fatalf("after raising MaxPerSecond to 100 ttl = %v, want 10s", ttl)
	}

	hj, _, _ := setup(0.5)
	if ttl := hj.Reset("n0"); ttl != 15*time.Second {
		t.Fatalf("jittered ttl = %v, want 10s + 0.5*10s", ttl)
	}
}

func TestExpiresAfterTTLPlusGraceOnce(t *testing.T) {
	h, fc, r := setup(0)
	ttl := h.Reset("n1")
	fc.Advance(ttl + 10*time.Second - time.Millisecond)
	r.assertNone(t)
	fc.Advance(time.Millisecond)
	r.waitFor(t, "n1")
	fc.Advance(time.Hour)
	r.assertNone(t)
	if c := r.count("n1"); c != 1 {
		t.Fatalf("expired %d times, want 1", c)
	}
	if h.Count() != 0 {
		t.Fatalf("expired timer still counted: %d", h.Count())
	}
}

func TestResetPostponesExpiry(t *testing.T) {
	h, fc, r := setup(0)
	h.Reset("n1")
	fc.Advance(15 * time.Second)
	h.Reset("n1")
	fc.Advance(15 * time.Second) // 30s after first arm, 15s after reset
	r.assertNone(t)
	fc.Advance(5 * time.Second)
	r.waitFor(t, "n1")
}

func TestFailover(t *testing.T) {
	h, fc, r := setup(0)
	h.ResetFailover([]string{"a", "b"})
	if h.Count() != 2 {
		t.Fatalf("count = %d", h.Count())
	}
	fc.Advance(309 * time.Second)
	r.assertNone(t)
	fc.Advance(time.Second)
	got := map[string]bool{}
	for i := 0; i < 2; i++ {
		select {
		case id := <-r.ch:
			got[id] = true
		case <-time.After(5 * time.Second):
			t.Fatal("failover timers did not expire")
		}
	}
	if !got["a"] || !got["b"] {
		t.Fatalf("expired %v", got)
	}
}

func TestClearPreventsExpiry(t *testing.T) {
	h, fc, r := setup(0)
	h.Reset("n1")
	h.Clear("n1")
	fc.Advance(time.Hour)
	r.assertNone(t)
}

func TestDisablePreventsExpiry(t *testing.T) {
	h, fc, r := setup(0)
	h.Reset("n1")
	h.ResetFailover([]string{"n2"})
	h.SetEnabled(false)
	if h.Count() != 0 {
		t.Fatal("disable must clear timers")
	}
	h.Reset("n3") // disabled: returns a TTL but arms nothing
	fc.Advance(time.Hour)
	r.assertNone(t)
	if h.Count() != 0 {
		t.Fatal("Reset armed a timer while disabled")
	}
}

// A timer that fired but lost the race for the lock to Clear must not expire
// the node. The fake clock lets us hold the callback back deterministically.
func TestClearWinsRaceWithFiringTimer(t *testing.T) {
	r := newRecorder()
	var fire func()
	cfg := DefaultConfig()
	cfg.Clock = captureClock{fn: func(f func()) { fire = f }}
	h := New(cfg, r.expire)
	h.SetEnabled(true)
	h.Reset("n1")
	h.Clear("n1")
	fire() // the timer's goroutine finally runs
	r.assertNone(t)

	h.Reset("n2")
	h.SetEnabled(false)
	h.SetEnabled(true)
	fire()
	r.assertNone(t)
}

type captureClock struct{ fn func(func()) }

func (captureClock) Now() time.Time { return time.Now() }
func (c captureClock) AfterFunc(_ time.Duration, f func()) clock.Timer {
	c.fn(f)
	return stopper{}
}

type stopper struct{}

func (stopper) Stop() bool { return false } // as if it already fired

func TestConcurrentUse(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MinTTL = time.Millisecond
	cfg.Grace = 0
	r := newRecorder()
	r.ch = make(chan string, 10000)
	h := New(cfg, r.expire)
	h.SetEnabled(true)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				id := fmt.Sprintf("n%d", i%20)
				switch i % 4 {
				case 0, 1:
					h.Reset(id)
				case 2:
					h.Clear(id)
				case 3:
					h.Count()
				}
			}
		}()
	}
	wg.Wait()
	h.SetEnabled(false)
}
