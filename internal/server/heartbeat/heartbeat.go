package heartbeat

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/server/clock"
)

// Config tunes the timers. Zero fields take the defaults of DefaultConfig.
type Config struct {
	MinTTL       time.Duration // 10s
	MaxPerSecond float64       // 50 heartbeats per second across the cluster
	Grace        time.Duration // 10s added to the timer, not to the TTL told
	FailoverTTL  time.Duration // 300s after a leadership change
	Rand         func() float64
	Clock        clock.Clock
}

// DefaultConfig returns Nomad's defaults.
func DefaultConfig() Config {
	return Config{
		MinTTL:       10 * time.Second,
		MaxPerSecond: 50,
		Grace:        10 * time.Second,
		FailoverTTL:  300 * time.Second,
		Rand:         rand.Float64,
		Clock:        clock.Real{},
	}
}

// Timers tracks one expiry timer per node. The zero value is not usable; use New.
type Timers struct {
	cfg      Config
	onExpire func(nodeID string)

	mu           sync.Mutex
	enabled      bool
	maxPerSecond float64
	timers       map[string]*entry
}

type entry struct {
	timer clock.Timer
}

// New returns disabled timers that call onExpire when a node misses its TTL.
func New(cfg Config, onExpire func(nodeID string)) *Timers {
	def := DefaultConfig()
	if cfg.MinTTL <= 0 {
		cfg.MinTTL = def.MinTTL
	}
	if cfg.MaxPerSecond <= 0 {
		cfg.MaxPerSecond = def.MaxPerSecond
	}
	if cfg.Grace < 0 {
		cfg.Grace = 0
	}
	if cfg.FailoverTTL <= 0 {
		cfg.FailoverTTL = def.FailoverTTL
	}
	if cfg.Rand == nil {
		cfg.Rand = def.Rand
	}
	if cfg.Clock == nil {
		cfg.Clock = def.Clock
	}
	return &Timers{cfg: cfg, onExpire: onExpire, maxPerSecond: cfg.MaxPerSecond, timers: make(map[string]*entry)}
}

// SetEnabled turns the timers on or off. Turning them off stops and forgets
// every timer; turning them on starts with none.
func (h *Timers) SetEnabled(enabled bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.enabled == enabled {
		return
	}
	h.enabled = enabled
	h.clearAllLocked()
}

// Enabled reports whether timers are armed by Reset.
func (h *Timers) Enabled() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.enabled
}

// SetMaxPerSecond changes the cluster-wide heartbeat rate that TTLs are sized
// for; it applies from the next Reset. Non-positive values are ignored.
func (h *Timers) SetMaxPerSecond(rate float64) {
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return
	}
	h.mu.Lock()
	h.maxPerSecond = rate
	h.mu.Unlock()
}

// MaxPerSecond returns the current heartbeat rate limit.
func (h *Timers) MaxPerSecond() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.maxPerSecond
}

// Reset (re)arms nodeID's timer and returns the TTL the client must heartbeat
// within. While disabled it returns the TTL without arming anything.
func (h *Timers) Reset(nodeID string) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.timers)
	if _, ok := h.timers[nodeID]; ok {
		n-- // the node's own timer does not lengthen its TTL
	}
	ttl := h.cfg.MinTTL
	if byRate := time.Duration(float64(n) / h.maxPerSecond * float64(time.Second)); byRate > ttl {
		ttl = byRate
	}
	ttl += time.Duration(h.cfg.Rand() * float64(ttl))
	if h.enabled {
		h.armLocked(nodeID, ttl+h.cfg.Grace)
	}
	return ttl
}

// ResetFailover arms every node with FailoverTTL plus grace; used right after
// a leadership gain so nodes have time to find the new leader.
func (h *Timers) ResetFailover(nodeIDs []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.enabled {
		return
	}
	for _, id := range nodeIDs {
		h.armLocked(id, h.cfg.FailoverTTL+h.cfg.Grace)
	}
}

// Clear forgets nodeID's timer (node deregistered or already marked down).
func (h *Timers) Clear(nodeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.timers[nodeID]; ok {
		e.timer.Stop()
		delete(h.timers, nodeID)
	}
}

// Count returns the number of armed timers.
func (h *Timers) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.timers)
}

func (h *Timers) armLocked(nodeID string, d time.Duration) {
	if old, ok := h.timers[nodeID]; ok {
		old.timer.Stop()
	}
	e := &entry{}
	e.timer = h.cfg.Clock.AfterFunc(d, func() { h.expire(nodeID, e) })
	h.timers[nodeID] = e
}

// expire runs when a timer fires. The identity check discards timers that
// were replaced, cleared or dropped after they fired but before this ran.
func (h *Timers) expire(nodeID string, e *entry) {
	h.mu.Lock()
	if !h.enabled || h.timers[nodeID] != e {
		h.mu.Unlock()
		return
	}
	delete(h.timers, nodeID)
	h.mu.Unlock()
	go h.onExpire(nodeID)
}

func (h *Timers) clearAllLocked() {
	for _, e := range h.timers {
		e.timer.Stop()
	}
	h.timers = make(map[string]*entry)
}
