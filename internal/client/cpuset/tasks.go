package cpuset

import (
	"sync"
	"sync/atomic"
	"time"
)

// ApplyFunc moves one running task onto a set of CPUs (its driver's
// drivers.CpusetUpdater).
type ApplyFunc func(Set) error

// member is a running task on the shared set.
type member struct {
	id    string
	apply ApplyFunc
	// applied is the set the task was last put on; warned the set a
	// failure to move it was last logged for. Guarded by applyMu.
	applied Set
	warned  Set
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
	if !m.applyTo(mb, shared) {
		m.scheduleRetry()
	}
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
	var failed atomic.Bool
	sem := make(chan struct{}, applyParallel)
	for _, mb := range members {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if !m.applyTo(mb, shared) {
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		m.scheduleRetry()
	} else {
		m.retryMu.Lock()
		m.retryDelay = 0
		m.retryMu.Unlock()
	}
}

// scheduleRetry runs another round later (backing off while moves keep
// failing, e.g. the container engine is down): a task left on an older set
// must not wait for the next change to be moved.
func (m *Manager) scheduleRetry() {
	m.retryMu.Lock()
	defer m.retryMu.Unlock()
	if m.retryPending {
		return
	}
	d := max(m.retryDelay, m.retryMin)
	m.retryDelay = min(2*d, m.retryMax)
	m.retryPending = true
	time.AfterFunc(d, func() {
		m.retryMu.Lock()
		m.retryPending = false
		m.retryMu.Unlock()
		m.sync()
	})
}

// applyParallel is how many tasks one change moves at once.
const applyParallel = 8

// applyTo moves one task; called under applyMu. A failure leaves the task
// marked on its old set, so the next round tries again; false then.
func (m *Manager) applyTo(mb *member, s Set) bool {
	if mb.gone.Load() || mb.applied.Equal(s) {
		return true
	}
	if err := mb.apply(s); err != nil {
		if mb.gone.Load() {
			return true // it exited meanwhile
		}
		if mb.warned.Equal(s) {
			m.logger.Debug("failed again to move task onto the shared cpuset", "task", mb.id, "cpus", s.String(), "error", err)
		} else {
			m.logger.Warn("failed to move task onto the shared cpuset; will retry", "task", mb.id, "cpus", s.String(), "error", err)
			mb.warned = s
		}
		return false
	}
	mb.applied = s
	return true
}
