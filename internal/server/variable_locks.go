package server

import (
	"sync"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// varLocks keeps the TTL timers of held variable locks. It lives only on
// the leader: it is rebuilt from state (every lock gets its full TTL again)
// when leadership is gained and dropped when it is lost. A timer that fires
// releases the lock through Raft; the lock delay that follows is kept here
// too, so a new leader may admit an acquire a little early, as Nomad's does.
type varLocks struct {
	mu      sync.Mutex
	enabled bool
	timers  map[string]*varLockTimer
	delayed map[string]time.Time
	// expire releases an expired lock (through Raft).
	expire func(ns, path, lockID string)
}

type varLockTimer struct {
	lockID string
	ttl    time.Duration
	delay  time.Duration
	timer  *time.Timer
}

func varKey(ns, path string) string { return ns + "\x00" + path }

// setEnabled starts (with the held locks of state) or stops the timers.
func (l *varLocks) setEnabled(on bool, held []*structs.VariableEncrypted) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.timers {
		t.timer.Stop()
	}
	l.timers, l.delayed, l.enabled = map[string]*varLockTimer{}, map[string]time.Time{}, on
	if !on {
		return
	}
	for _, v := range held {
		if v.Lock != nil {
			l.trackLocked(v.Namespace, v.Path, v.Lock)
		}
	}
}

// track starts the TTL of a lock just acquired.
func (l *varLocks) track(ns, path string, lock *structs.VariableLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.enabled {
		l.trackLocked(ns, path, lock)
	}
}

func (l *varLocks) trackLocked(ns, path string, lock *structs.VariableLock) {
	k := varKey(ns, path)
	if old := l.timers[k]; old != nil {
		old.timer.Stop()
	}
	t := &varLockTimer{lockID: lock.ID, ttl: lock.TTL, delay: lock.LockDelay}
	t.timer = time.AfterFunc(lock.TTL, func() { l.fire(ns, path, t) })
	l.timers[k] = t
}

func (l *varLocks) fire(ns, path string, t *varLockTimer) {
	l.mu.Lock()
	k := varKey(ns, path)
	if l.timers[k] != t || !l.enabled {
		l.mu.Unlock()
		return
	}
	delete(l.timers, k)
	l.delayed[k] = time.Now().Add(t.delay)
	expire := l.expire
	l.mu.Unlock()
	if expire != nil {
		expire(ns, path, t.lockID)
	}
}

// renew restarts a held lock's TTL; false when this leader holds no timer
// for that lock (it expired, or it is another lock).
func (l *varLocks) renew(ns, path, lockID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.timers[varKey(ns, path)]
	if t == nil || t.lockID != lockID {
		return false
	}
	t.timer.Reset(t.ttl)
	return true
}

// untrack drops the timer of a lock released (or a variable deleted).
func (l *varLocks) untrack(ns, path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.timers[varKey(ns, path)]; t != nil {
		t.timer.Stop()
		delete(l.timers, varKey(ns, path))
	}
}

// delayedUntil is when the lock delay after an expiry ends (zero: none).
func (l *varLocks) delayedUntil(ns, path string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	until := l.delayed[varKey(ns, path)]
	if !until.IsZero() && time.Now().After(until) {
		delete(l.delayed, varKey(ns, path))
		return time.Time{}
	}
	return until
}
