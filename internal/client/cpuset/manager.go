package cpuset

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Manager keeps the node's shared cpuset and the tasks that run on it. A
// nil *Manager does nothing (a client that cannot tell its CPUs apart, and
// runners in tests). It is safe for concurrent use.
type Manager struct {
	usable Set
	logger hclog.Logger

	mu sync.Mutex
	// allocs are the cores each live allocation holds.
	allocs map[string]Set
	// tasks are the running tasks on the shared set, by task ID.
	tasks map[string]*member

	// applyMu serialises moving tasks: a round reads the newest shared set
	// under it, so a slower round can never leave a task on an older set
	// than a later one applied.
	applyMu sync.Mutex

	// A round in which a move failed is retried after retryDelay (from
	// retryMin, doubling up to retryMax); retryPending: one is scheduled.
	retryMu            sync.Mutex
	retryMin, retryMax time.Duration
	retryDelay         time.Duration
	retryPending       bool
}

// NewManager returns a manager of the node's usable cores (the cores tasks
// may run on at all); an empty usable set means the node's CPUs are
// unknown, and the manager then changes nothing.
func NewManager(usable Set, logger hclog.Logger) *Manager {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Manager{usable: usable, logger: logger.Named("cpuset"), allocs: map[string]Set{}, tasks: map[string]*member{},
		retryMin: 2 * time.Second, retryMax: time.Minute}
}

// Usable is the node's usable cores.
func (m *Manager) Usable() Set {
	if m == nil {
		return Set{}
	}
	return m.usable
}

// AddAlloc records the cores an allocation holds (none: nothing changes)
// and moves every task on the shared set off them before it returns.
// Adding an allocation again replaces its cores.
func (m *Manager) AddAlloc(allocID string, cores Set) {
	if m == nil || m.usable.Empty() {
		return
	}
	m.mu.Lock()
	old, had := m.allocs[allocID]
	if cores.Empty() {
		delete(m.allocs, allocID)
	} else {
		m.allocs[allocID] = cores
	}
	m.mu.Unlock()
	if had && old.Equal(cores) || !had && cores.Empty() {
		return
	}
	m.sync()
}

// RemoveAlloc releases an allocation's cores (its runner is done) and
// gives them back to every task on the shared set before it returns.
func (m *Manager) RemoveAlloc(allocID string) {
	if m == nil || m.usable.Empty() {
		return
	}
	m.mu.Lock()
	_, had := m.allocs[allocID]
	delete(m.allocs, allocID)
	m.mu.Unlock()
	if had {
		m.sync()
	}
}

// Reserved is every core the live allocations hold.
func (m *Manager) Reserved() Set {
	if m == nil {
		return Set{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reservedLocked()
}

func (m *Manager) reservedLocked() Set {
	var all []uint16
	for _, s := range m.allocs {
		all = append(all, s.ids...)
	}
	return New(all...)
}

// Shared is the set a task without reserved cores may run on now: the
// usable cores less every reserved one. When allocations hold every usable
// core, it is all the usable cores: such tasks then share the reserved
// cores rather than have none. Empty when the node's CPUs are unknown
// (the task is left wherever it runs).
func (m *Manager) Shared() Set {
	if m == nil {
		return Set{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sharedLocked()
}

func (m *Manager) sharedLocked() Set {
	if m.usable.Empty() {
		return Set{}
	}
	s := m.usable.Difference(m.reservedLocked())
	if s.Empty() {
		return m.usable
	}
	return s
}
