package cpuset

import (
	"sync"
	"sync/atomic"
)

// ApplyFunc moves one running task onto a set of CPUs (its driver's
// drivers.CpusetUpdater).
type ApplyFunc func(Set) error

// member is a running task on the shared set.
type member struct {
	id    string
	apply ApplyFunc
	// applied is the set the task was last put on; guarded by applyMu.
	applied Set
	gone    atomic.Bool
}

// Track registers a running task without reserved cores. startedWith is
// the shared set it was started on (what Shared returned before its
// start); if the set changed meanwhile, or the task was started by an
// earlier client (startedWith empty), it is moved now. Every later change
// moves it too, until the returned untrack is called (the task has
// exited). A task tracked twice under one ID replaces the first.
func (m *Manager) Track(taskID string, startedWith Set, apply ApplyFunc) (untrack func()) {
	if m == nil || m.usable.Empty() || apply == nil {
		return func() {}
	}
	mb := &member{id: taskID, apply: apply, applied: startedWith}
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	m.mu.Lock()
	if old := m.tasks[taskID]; old != nil {
		old.gone.Store(true)
	}
	m.tasks[taskID] = mb
	shared := m.sharedLocked()
	m.mu.Unlock()
	m.applyTo(mb, shared)
	return func() {
		mb.gone.Store(true)
		m.mu.Lock()
		if m.tasks[taskID] == mb {
			delete(m.tasks, taskID)
		}
		m.mu.Unlock()
	}
}

// Tracked is how many tasks run on the shared set.
func (m *Manager) Tracked() int {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.tasks)
}

// sync moves every tracked task onto the current shared set.
func (m *Manager) sync() {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	m.mu.Lock()
	shared := m.sharedLocked()
	members := make([]*member, 0, len(m.tasks))
	for _, mb := range m.tasks {
		members = append(members, mb)
	}
	m.mu.Unlock()
	m.logger.Debug("shared cpuset changed", "cpus", shared.String(), "tasks", len(members))
	// Tasks are moved a few at a time (each may be an engine round trip);
	// the round ends only when every one is done.
	var wg sync.WaitGroup
	sem := make(chan struct{}, applyParallel)
	for _, mb := range members {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			m.applyTo(mb, shared)
		}()
	}
	wg.Wait()
}

// applyParallel is how many tasks one change moves at once.
const applyParallel = 8

// applyTo moves one task; called under applyMu. A failure leaves the task
// marked on its old set, so the next change tries again.
func (m *Manager) applyTo(mb *member, s Set) {
	if mb.gone.Load() || mb.applied.Equal(s) {
		return
	}
	if err := mb.apply(s); err != nil {
		if !mb.gone.Load() {
			m.logger.Warn("failed to move task onto the shared cpuset", "task", mb.id, "cpus", s.String(), "error", err)
		}
		return
	}
	mb.applied = s
}
