package heartbeat

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/server/clock"
)

// recorder collects the batches onExpire receives. With the fake clock the
// sweeper runs synchronously inside Advance, so no waiting is needed.
type recorder struct {
	mu      sync.Mutex
	batches [][]string
}

func (r *recorder) expire(ids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, slices.Clone(ids))
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, b := range r.batches {
		out = append(out, b...)
	}
	slices.Sort(out)
	return out
}

func (r *recorder) numBatches() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.batches)
}

func setup(randVal float64) (*Timers, *clock.Fake, *recorder) {
	fc := clock.NewFake(time.Unix(1000, 0))
	r := &recorder{}
	cfg := DefaultConfig()
	cfg.Clock = fc
	cfg.Rand = func() float64 { return randVal }
	h := New(cfg, r.expire)
	h.SetEnabled(true)
	return h, fc, r
}

func TestTTLIsBoundedAndIndependentOfClusterSize(t *testing.T) {
	h, _, _ := setup(0)
	if ttl := h.Reset("n0"); ttl != 10*time.Second {
		t.Fatalf("small cluster ttl = %v, want MinTTL 10s", ttl)
	}
	// 10,000 nodes: Nomad's rule would give 200 s (400 s with jitter).
	for i := 0; i < 10000; i++ {
		h.Reset(fmt.Sprintf("node-%d", i))
	}
	if ttl := h.Reset("n0"); ttl != 10*time.Second {
		t.Fatalf("10,001 nodes ttl = %v, want 10s", ttl)
	}
	// An operator may still trade detection latency for leader CPU.
	h.SetMaxPerSecond(500)
	if ttl := h.Reset("n0"); ttl != 20*time.Second {
		t.Fatalf("after lowering MaxPerSecond to 500 ttl = %v, want 20s", ttl)
	}

	hj, _, _ := setup(1)
	if ttl := hj.Reset("n0"); ttl != 12*time.Second {
		t.Fatalf("max jittered ttl = %v, want 10s + 0.2*10s", ttl)
	}
}

func TestExpiresAfterTTLPlusGraceOnce(t *testing.T) {
	h, fc, r := setup(0)
	ttl := h.Reset("n1")
	fc.Advance(ttl + 10*time.Second - time.Millisecond)
	if got := r.all(); len(got) != 0 {
		t.Fatalf("expired early: %v", got)
	}
	fc.Advance(500 * time.Millisecond) // at most one sweep interval late
	if got := r.all(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("expired %v, want [n1]", got)
	}
	fc.Advance(time.Hour)
	if got := r.all(); len(got) != 1 {
		t.Fatalf("expired %v, want n1 once", got)
	}
	if h.Count() != 0 || h.Armed("n1") {
		t.Fatalf("expired node still armed: %d", h.Count())
	}
}

func TestResetPostponesExpiry(t *testing.T) {
	h, fc, r := setup(0)
	h.Reset("n1")
	fc.Advance(15 * time.Second)
	h.Reset("n1")
	fc.Advance(15 * time.Second) // 30s after first arm, 15s after reset
	if got := r.all(); len(got) != 0 {
		t.Fatalf("expired %v though reset", got)
	}
	fc.Advance(5*time.Second + 500*time.Millisecond)
	if got := r.all(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("expired %v, want [n1]", got)
	}
}

// Many nodes that fall silent together are reported in one batch, however
// many there are; nodes that keep heartbeating are not in it.
func TestSilentNodesExpireInOneBatch(t *testing.T) {
	h, fc, r := setup(0)
	for i := 0; i < 1000; i++ {
		h.Reset(fmt.Sprintf("silent-%04d", i))
	}
	h.Reset("alive")
	for i := 0; i < 4; i++ {
		fc.Advance(5 * time.Second)
		h.Reset("alive")
	}
	fc.Advance(500 * time.Millisecond)
	if got := len(r.all()); got != 1000 {
		t.Fatalf("expired %d nodes, want 1000", got)
	}
	if r.numBatches() != 1 {
		t.Fatalf("%d batches, want 1", r.numBatches())
	}
	if !h.Armed("alive") || h.Count() != 1 {
		t.Fatalf("alive node lost its deadline (count %d)", h.Count())
	}
}

func TestFailoverAndFirstHeartbeatShortensDeadline(t *testing.T) {
	h, fc, r := setup(0)
	h.ResetFailover([]string{"a", "b"})
	if h.Count() != 2 {
		t.Fatalf("count = %d", h.Count())
	}
	fc.Advance(100 * time.Second)
	h.Reset("b") // b found the new leader: back to TTL + grace
	fc.Advance(20*time.Second + 500*time.Millisecond)
	if got := r.all(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("expired %v, want [b] (20 s after its heartbeat)", got)
	}
	fc.Advance(189 * time.Second) // 309.5 s after the failover
	if got := r.all(); len(got) != 1 {
		t.Fatalf("a expired before failover TTL + grace: %v", got)
	}
	fc.Advance(time.Second)
	if got := r.all(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("expired %v, want a and b", got)
	}
}

func TestClearPreventsExpiry(t *testing.T) {
	h, fc, r := setup(0)
	h.Reset("n1")
	h.Reset("n2")
	h.Clear("n1")
	h.Clear("never-armed")
	fc.Advance(time.Hour)
	if got := r.all(); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("expired %v, want [n2]", got)
	}
}

func TestDisablePreventsExpiryAndStopsSweeper(t *testing.T) {
	h, fc, r := setup(0)
	h.Reset("n1")
	h.ResetFailover([]string{"n2"})
	h.SetEnabled(false)
	if h.Count() != 0 {
		t.Fatal("disable must clear deadlines")
	}
	if ttl := h.Reset("n3"); ttl != 10*time.Second { // disabled: a TTL, nothing armed
		t.Fatalf("disabled ttl = %v", ttl)
	}
	fc.Advance(time.Hour)
	if got := r.all(); len(got) != 0 {
		t.Fatalf("expired %v while disabled", got)
	}
	if h.Count() != 0 {
		t.Fatal("Reset armed a deadline while disabled")
	}
	if fc.Pending() != 0 {
		t.Fatalf("%d clock timers left after disable, want 0", fc.Pending())
	}
	// Re-enabling starts one sweeper again, and only one.
	h.SetEnabled(true)
	h.SetEnabled(true)
	if fc.Pending() != 1 {
		t.Fatalf("%d sweepers after enable, want 1", fc.Pending())
	}
}

// The sweeper is one chain of timers, never one timer per node, and the
// next sweep is only scheduled once onExpire returned.
func TestOneSweeperNoPerNodeTimers(t *testing.T) {
	fc := clock.NewFake(time.Unix(1000, 0))
	var h *Timers
	var pendingDuringExpire int
	h = New(Config{Clock: fc, Rand: func() float64 { return 0 }}, func([]string) {
		pendingDuringExpire = fc.Pending()
	})
	h.SetEnabled(true)
	for i := 0; i < 100; i++ {
		h.Reset(fmt.Sprintf("n%d", i))
	}
	if fc.Pending() != 1 {
		t.Fatalf("%d clock timers for 100 nodes, want 1", fc.Pending())
	}
	fc.Advance(21 * time.Second)
	if pendingDuringExpire != 0 {
		t.Fatalf("next sweep armed while onExpire ran (%d timers)", pendingDuringExpire)
	}
	if fc.Pending() != 1 {
		t.Fatalf("%d clock timers after the batch, want 1", fc.Pending())
	}
}

// A sweep from an earlier leadership term must not keep running or report
// deadlines armed in a later term.
func TestStaleSweepStops(t *testing.T) {
	r := &recorder{}
	var fires []func()
	cfg := DefaultConfig()
	cfg.Clock = captureClock{fn: func(f func()) { fires = append(fires, f) }}
	h := New(cfg, r.expire)
	h.SetEnabled(true)
	h.SetEnabled(false)
	h.SetEnabled(true)
	h.ResetFailover([]string{"n1"})
	fires[0]() // the first term's sweep finally runs
	if len(fires) != 2 {
		t.Fatalf("stale sweep re-armed itself (%d arms)", len(fires))
	}
	if got := r.all(); len(got) != 0 {
		t.Fatalf("stale sweep reported %v", got)
	}
}

type captureClock struct{ fn func(func()) }

func (captureClock) Now() time.Time { return time.Now() }
func (c captureClock) AfterFunc(_ time.Duration, f func()) clock.Timer {
	c.fn(f)
	return stopper{}
}
func (c captureClock) AfterFuncAt(_ time.Time, f func()) clock.Timer { return c.AfterFunc(0, f) }

type stopper struct{}

func (stopper) Stop() bool { return false } // as if it already fired

func TestConcurrentUse(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MinTTL = time.Millisecond
	cfg.Grace = 0
	cfg.SweepInterval = time.Millisecond
	var mu sync.Mutex
	expired := 0
	h := New(cfg, func(ids []string) { mu.Lock(); expired += len(ids); mu.Unlock() })
	h.SetEnabled(true)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				id := fmt.Sprintf("n%d", i%20)
				switch i % 5 {
				case 0, 1:
					h.Reset(id)
				case 2:
					h.Clear(id)
				case 3:
					h.Count()
				case 4:
					h.ResetFailover([]string{id})
				}
			}
		}()
	}
	wg.Wait()
	h.SetEnabled(false)
}

// BenchmarkReset measures the per-heartbeat cost on the leader with 10,000
// nodes armed, from parallel callers as RPC handlers are.
func BenchmarkReset(b *testing.B) {
	const n = 10000
	h := New(Config{}, func([]string) {})
	h.SetEnabled(true)
	defer h.SetEnabled(false)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%08x-0000-0000-0000-000000000000", i)
		h.Reset(ids[i])
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			h.Reset(ids[i%n])
			i += 7
		}
	})
}

// BenchmarkSweep measures one sweep over 10,000 deadlines that all reach
// the top of the heap at once and have all moved on (the worst case: every
// entry is re-filed). ns/op ÷ 10,000 is the sweeper's cost per node per TTL.
func BenchmarkSweep(b *testing.B) {
	const n = 10000
	fc := clock.NewFake(time.Unix(0, 0))
	h := New(Config{Clock: fc, Rand: func() float64 { return 0 }, SweepInterval: time.Hour}, func([]string) {})
	h.SetEnabled(true)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("node-%d", i)
		h.Reset(ids[i])
	}
	gen := h.gen
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		fc.Advance(19 * time.Second)
		for _, id := range ids {
			h.Reset(id)
		}
		fc.Advance(2 * time.Second) // every filed due has passed
		b.StartTimer()
		if got := h.collect(gen); len(got) != 0 {
			b.Fatalf("%d expired", len(got))
		}
	}
}
