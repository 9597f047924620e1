package rawexec

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// Leftovers are the cleanups of destroyed tasks that failed (a process
// that would not die, a cgroup that could not be removed, a supervisor
// that would not exit), by task ID. A destroyed task is forgotten all the
// same: kept, it would make every later start of its ID fail as "already
// started" for as long as the agent runs. Each cleanup is retried on the
// driver's fingerprint (Sweep) until it succeeds, and handed to the next
// start of the same ID (TakeOver), which must not have it run behind its
// back once it owns the task's cgroups again. The drivers built on
// raw_exec (exec, java, qemu) keep theirs the same way.
type Leftovers struct {
	logger   hclog.Logger
	mu       sync.Mutex
	m        map[string]*leftover
	sweeping atomic.Bool
}

type leftover struct {
	mu      sync.Mutex // held while the cleanup runs
	done    bool       // cleaned up, or taken over by a new start
	cleanup func() error
}

// NewLeftovers returns an empty list logging to logger.
func NewLeftovers(logger hclog.Logger) *Leftovers {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Leftovers{logger: logger, m: map[string]*leftover{}}
}

// Add records the failed cleanup of task id, to be retried.
func (l *Leftovers) Add(id string, cleanup func() error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[id] = &leftover{cleanup: cleanup}
}

// Len is how many cleanups are pending.
func (l *Leftovers) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// TakeOver removes task id's pending cleanup, if any, for a new start of
// the task: it waits for a sweep running that cleanup to finish, and
// returns the cleanup for the caller to run (nil: none was pending).
func (l *Leftovers) TakeOver(id string) func() error {
	l.mu.Lock()
	lo := l.m[id]
	delete(l.m, id)
	l.mu.Unlock()
	if lo == nil {
		return nil
	}
	lo.mu.Lock()
	defer lo.mu.Unlock()
	if lo.done {
		return nil
	}
	lo.done = true
	return lo.cleanup
}

// Sweep retries every pending cleanup once; the ones that succeed are
// dropped.
func (l *Leftovers) Sweep() {
	l.mu.Lock()
	ids := make([]string, 0, len(l.m))
	for id := range l.m {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	sort.Strings(ids)
	for _, id := range ids {
		l.mu.Lock()
		lo := l.m[id]
		l.mu.Unlock()
		if lo == nil {
			continue
		}
		lo.mu.Lock()
		if lo.done {
			lo.mu.Unlock()
			continue
		}
		err := lo.cleanup()
		if err == nil {
			lo.done = true
		}
		lo.mu.Unlock()
		if err != nil {
			l.logger.Debug("cleanup of a destroyed task failed again; retrying later", "task", id, "error", err)
			continue
		}
		l.logger.Info("cleanup of a destroyed task finished", "task", id)
		l.mu.Lock()
		if l.m[id] == lo {
			delete(l.m, id)
		}
		l.mu.Unlock()
	}
}

// SweepAsync starts a Sweep in the background unless one is running or
// nothing is pending: a fingerprint never waits for a slow cleanup.
func (l *Leftovers) SweepAsync() {
	if l.Len() == 0 || !l.sweeping.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer l.sweeping.Store(false)
		l.Sweep()
	}()
}
