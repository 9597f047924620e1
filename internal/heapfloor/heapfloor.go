// Package heapfloor paces the Go garbage collector of a server process so
// that it does not collect while the heap is small.
//
// The collector's default (GOGC=100) starts a cycle when the heap reaches
// twice what the previous cycle found live. A server's live heap is its
// state (hundreds of MB for a large cluster) while the garbage it makes
// (Raft entries, RPC bodies, scheduler scratch) is proportional to work, so
// a busy server with a modest state collects many times a second: a fifth
// to a third of its CPU in the scale benchmarks. A floor keeps the heap
// goal at least Floor bytes: while the live heap is under Floor/2 the GC
// percentage is raised so the goal is Floor; once the live heap is larger
// the default applies unchanged, so the peak memory of a large server is
// what it was. The package never lowers the percentage below the default
// and does nothing when the operator set GOGC.
//
// It must never block the finalizer goroutine it runs on: it reads one
// runtime metric and sets the percentage.
package heapfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// defaultPercent is the runtime's own default (GOGC=100).
const defaultPercent = 100

// maxPercent bounds the raise, so an almost empty heap (a fresh server)
// does not get a percentage that stays absurd for a cycle.
const maxPercent = 2000

// Percent returns the GC percentage that makes the heap goal floor bytes
// for a live heap of live bytes, and never less than the default.
func Percent(live, floor uint64) int {
	if live == 0 || floor <= 2*live {
		return defaultPercent
	}
	p := (floor - live) * 100 / live
	if p > maxPercent {
		return maxPercent
	}
	return max(int(p), defaultPercent)
}

// Tuner adjusts the GC percentage after every collection.
type Tuner struct {
	floor   uint64
	stopped atomic.Bool
	mu      sync.Mutex
	current int
	sample  []metrics.Sample
	set     func(int) int // debug.SetGCPercent; tests replace it
}

// Start begins pacing with the given floor in bytes. It returns nil (no
// tuning) when floor is 0 or the GOGC environment variable is set: an
// operator's explicit setting wins.
func Start(floor uint64) *Tuner {
	if floor == 0 || os.Getenv("GOGC") != "" {
		return nil
	}
	t := newTuner(floor, debug.SetGCPercent)
	t.arm()
	return t
}

func newTuner(floor uint64, set func(int) int) *Tuner {
	return &Tuner{floor: floor, current: defaultPercent, set: set,
		sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
}

// Stop restores the default percentage; the next collection ends the
// tuning.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	t.stopped.Store(true)
	t.apply(defaultPercent)
}

// sentinel is collected once per GC cycle; its finalizer re-arms the next.
type sentinel struct {
	t *Tuner
	_ [8]byte // not a tiny allocation: those may be finalized late
}

func (t *Tuner) arm() {
	s := &sentinel{t: t}
	runtime.SetFinalizer(s, func(s *sentinel) { s.t.afterGC() })
}

func (t *Tuner) afterGC() {
	if t.stopped.Load() {
		return
	}
	t.mu.Lock()
	metrics.Read(t.sample)
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	t.mu.Unlock()
	t.apply(Percent(live, t.floor))
	t.arm()
}

// apply sets p unless it is within 10% of the current setting (each call
// recomputes the pacer's goal).
func (t *Tuner) apply(p int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d := p - t.current; p != defaultPercent && d < t.current/10 && -d < t.current/10 {
		return
	}
	if p != t.current {
		t.set(p)
		t.current = p
	}
}

// DefaultFloor is the floor a server uses unless configured: 512 MB, or an
// eighth of the memory the process may use when that is less.
func DefaultFloor() uint64 {
	floor := uint64(512 << 20)
	if m := memoryAvailable(); m > 0 && m/8 < floor {
		floor = m / 8
	}
	return floor
}
