package heartbeat

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-project/drover/internal/server/clock"
)

// Config tunes the deadlines. Zero fields take the defaults of DefaultConfig.
type Config struct {
	// MinTTL is the heartbeat interval told to clients while the cluster
	// is below MaxPerSecond*MinTTL nodes (so: always, at the default).
	MinTTL time.Duration // 10s
	// MaxPerSecond is the cluster-wide heartbeat rate the leader is sized
	// for; the TTL only grows past MinTTL when nodes/MinTTL would exceed it.
	MaxPerSecond float64 // 5,000/s: the TTL stays at MinTTL up to 50,000 nodes
	// Jitter is the fraction of the TTL added at random to each answer, so
	// heartbeats that arrive together (after a failover) spread out.
	Jitter float64 // 0.2: TTLs are 10–12 s
	// Grace is added to the deadline, not to the TTL told.
	Grace time.Duration // 10s
	// FailoverTTL (plus Grace) is every node's first deadline after a
	// leadership gain.
	FailoverTTL time.Duration // 300s
	// SweepInterval is how often the sweeper looks for expired deadlines:
	// the detection latency it adds, and the window whose expiries are
	// reported together.
	SweepInterval time.Duration // 500ms
	Rand          func() float64
	Clock         clock.Clock
}

// DefaultConfig returns Drover's defaults.
func DefaultConfig() Config {
	return Config{
		MinTTL:        10 * time.Second,
		MaxPerSecond:  5000,
		Jitter:        0.2,
		Grace:         10 * time.Second,
		FailoverTTL:   300 * time.Second,
		SweepInterval: 500 * time.Millisecond,
		Rand:          rand.Float64,
		Clock:         clock.Real{},
	}
}

// Timers tracks one deadline per node and expires them in batches from a
// single sweeper. The zero value is not usable; use New.
type Timers struct {
	cfg      Config
	onExpire func(nodeIDs []string)
	epoch    time.Time // deadlines are nanoseconds since epoch (monotonic)

	maxPerSecond atomic.Uint64 // math.Float64bits

	// mu guards the fields below. Reset of a known node takes it shared:
	// heartbeats never wait for one another, only for the rare writers
	// (first arm, Clear, failover, a sweep that finds work).
	mu      sync.RWMutex
	enabled bool
	gen     uint64 // bumped by SetEnabled; a sweep of an older gen stops
	sweep   clock.Timer
	nodes   map[string]*entry
	due     dueHeap
}

// entry is one node's deadline. deadline is the truth, written by Reset
// under the shared lock; due is where the entry sits in the heap, written
// only under the exclusive lock. due <= deadline always holds, except
// transiently inside Reset, which fixes the heap itself when it shortens
// a deadline; so the sweeper, popping by due, never misses an expiry and
// re-files an entry whose deadline moved on (lazily, once per pass).
type entry struct {
	id       string
	deadline atomic.Int64
	due      int64
	index    int
}

// New returns disabled timers that call onExpire with the nodes whose
// deadlines passed.
func New(cfg Config, onExpire func(nodeIDs []string)) *Timers {
	def := DefaultConfig()
	if cfg.MinTTL <= 0 {
		cfg.MinTTL = def.MinTTL
	}
	if cfg.MaxPerSecond <= 0 || math.IsNaN(cfg.MaxPerSecond) || math.IsInf(cfg.MaxPerSecond, 0) {
		cfg.MaxPerSecond = def.MaxPerSecond
	}
	if cfg.Jitter < 0 || math.IsNaN(cfg.Jitter) {
		cfg.Jitter = 0
	}
	if cfg.Grace < 0 {
		cfg.Grace = 0
	}
	if cfg.FailoverTTL <= 0 {
		cfg.FailoverTTL = def.FailoverTTL
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = def.SweepInterval
	}
	if cfg.Rand == nil {
		cfg.Rand = def.Rand
	}
	if cfg.Clock == nil {
		cfg.Clock = def.Clock
	}
	h := &Timers{cfg: cfg, onExpire: onExpire, epoch: cfg.Clock.Now(), nodes: make(map[string]*entry)}
	h.maxPerSecond.Store(math.Float64bits(cfg.MaxPerSecond))
	return h
}

// SetEnabled turns the timers on or off. Turning them off forgets every
// deadline and stops the sweeper; turning them on starts the sweeper with
// no deadlines.
func (h *Timers) SetEnabled(enabled bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.enabled == enabled {
		return
	}
	h.enabled = enabled
	h.gen++
	h.nodes = make(map[string]*entry)
	h.due = nil
	if h.sweep != nil {
		h.sweep.Stop()
		h.sweep = nil
	}
	if enabled {
		h.armSweepLocked(h.gen)
	}
}

// Enabled reports whether Reset arms deadlines.
func (h *Timers) Enabled() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.enabled
}

// SetMaxPerSecond changes the cluster-wide heartbeat rate that TTLs are sized
// for; it applies from the next Reset. Non-positive values are ignored.
func (h *Timers) SetMaxPerSecond(rate float64) {
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return
	}
	h.maxPerSecond.Store(math.Float64bits(rate))
}

// MaxPerSecond returns the current heartbeat rate limit.
func (h *Timers) MaxPerSecond() float64 {
	return math.Float64frombits(h.maxPerSecond.Load())
}

// ttl is the interval told to a client when the cluster has n other nodes.
func (h *Timers) ttl(n int) time.Duration {
	ttl := h.cfg.MinTTL
	if byRate := time.Duration(float64(n) / h.MaxPerSecond() * float64(time.Second)); byRate > ttl {
		ttl = byRate
	}
	if h.cfg.Jitter > 0 {
		ttl += time.Duration(h.cfg.Rand() * h.cfg.Jitter * float64(ttl))
	}
	return ttl
}

func (h *Timers) now() int64 { return int64(h.cfg.Clock.Now().Sub(h.epoch)) }

// Reset moves nodeID's deadline to now + TTL + Grace and returns the TTL
// the client must heartbeat within. While disabled it returns the TTL
// without arming anything. For a node already known it allocates nothing
// and takes the lock shared.
func (h *Timers) Reset(nodeID string) time.Duration {
	h.mu.RLock()
	e, ok := h.nodes[nodeID]
	n := len(h.nodes)
	if ok {
		n-- // the node's own deadline does not lengthen its TTL
	}
	ttl := h.ttl(n)
	if !h.enabled {
		h.mu.RUnlock()
		return ttl
	}
	deadline := h.now() + int64(ttl+h.cfg.Grace)
	if ok {
		e.deadline.Store(deadline)
		if deadline >= e.due {
			h.mu.RUnlock()
			return ttl
		}
	}
	h.mu.RUnlock()
	// Slow path: a new node, or a deadline earlier than the heap knows
	// (the first heartbeat after a failover).
	h.mu.Lock()
	if h.enabled {
		h.armLocked(nodeID, deadline)
	}
	h.mu.Unlock()
	return ttl
}

// ResetFailover gives every node FailoverTTL plus Grace; used right after a
// leadership gain so nodes have time to find the new leader.
func (h *Timers) ResetFailover(nodeIDs []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.enabled {
		return
	}
	deadline := h.now() + int64(h.cfg.FailoverTTL+h.cfg.Grace)
	for _, id := range nodeIDs {
		h.armLocked(id, deadline)
	}
}

// Clear forgets nodeID's deadline (node deregistered or marked down).
func (h *Timers) Clear(nodeID string) {
	h.mu.RLock()
	_, ok := h.nodes[nodeID]
	h.mu.RUnlock()
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.nodes[nodeID]; ok {
		heap.Remove(&h.due, e.index)
		delete(h.nodes, nodeID)
	}
}

// Armed reports whether nodeID has a deadline (it heartbeated since it was
// last expired or cleared).
func (h *Timers) Armed(nodeID string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	_, ok := h.nodes[nodeID]
	return ok
}

// Count returns the number of armed deadlines.
func (h *Timers) Count() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.nodes)
}

// armLocked sets nodeID's deadline, filing it in the heap where needed.
func (h *Timers) armLocked(nodeID string, deadline int64) {
	e, ok := h.nodes[nodeID]
	if !ok {
		e = &entry{id: nodeID, due: deadline}
		e.deadline.Store(deadline)
		h.nodes[nodeID] = e
		heap.Push(&h.due, e)
		return
	}
	e.deadline.Store(deadline)
	if deadline < e.due {
		e.due = deadline
		heap.Fix(&h.due, e.index)
	}
}

func (h *Timers) armSweepLocked(gen uint64) {
	h.sweep = h.cfg.Clock.AfterFunc(h.cfg.SweepInterval, func() { h.runSweep(gen) })
}

// runSweep expires every node whose deadline passed, reports them in one
// call, and only then schedules the next sweep: batches never overlap, and
// expiries that happen while one is being handled form the next batch.
func (h *Timers) runSweep(gen uint64) {
	expired := h.collect(gen)
	if len(expired) > 0 {
		h.onExpire(expired)
	}
	h.mu.Lock()
	if h.enabled && h.gen == gen {
		h.armSweepLocked(gen)
	}
	h.mu.Unlock()
}

// collect pops the expired entries. Entries whose deadline moved on since
// they were filed are re-filed at their new deadline.
func (h *Timers) collect(gen uint64) []string {
	now := h.now()
	// Peek under the shared lock: most sweeps find nothing due.
	h.mu.RLock()
	idle := !h.enabled || h.gen != gen || len(h.due) == 0 || h.due[0].due > now
	h.mu.RUnlock()
	if idle {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.enabled || h.gen != gen {
		return nil
	}
	var expired []string
	for len(h.due) > 0 && h.due[0].due <= now {
		e := h.due[0]
		if d := e.deadline.Load(); d > now {
			e.due = d
			heap.Fix(&h.due, 0)
			continue
		}
		heap.Pop(&h.due)
		delete(h.nodes, e.id)
		expired = append(expired, e.id)
	}
	return expired
}

// dueHeap is a min-heap of entries by due.
type dueHeap []*entry

func (q dueHeap) Len() int           { return len(q) }
func (q dueHeap) Less(i, j int) bool { return q[i].due < q[j].due }
func (q dueHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index = i
	q[j].index = j
}
func (q *dueHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*q)
	*q = append(*q, e)
}
func (q *dueHeap) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	e.index = -1
	return e
}
