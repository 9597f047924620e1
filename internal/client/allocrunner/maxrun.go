package allocrunner

import (
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// max_run_duration (Nomad's batch timeout): a batch or sysbatch group's
// allocation is stopped once it has run that long, counted from when its
// runner started (prestart and poststart tasks count; a task slow to start
// counts too). Its tasks are killed in the usual order, its poststop tasks
// are not started, and it ends complete with the description
// MaxRunExceededDesc: a batch allocation that ran out of time is done, not
// failed, so it is not rescheduled. A change of max_run_duration reaches a
// running allocation as an in-place update.

// MaxRunExceededDesc is the ClientDescription of an allocation stopped by
// its max_run_duration.
const MaxRunExceededDesc = "allocation exceeded max_run_duration"

// maxRunOf is the allocation's current max_run_duration; 0: none.
func (ar *AllocRunner) maxRunOf() time.Duration {
	ar.mu.Lock()
	a := ar.alloc
	ar.mu.Unlock()
	if a == nil || a.Job == nil || (a.Job.Type != structs.JobTypeBatch && a.Job.Type != structs.JobTypeSysBatch) {
		return 0
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil || tg.MaxRunDuration == nil || *tg.MaxRunDuration <= 0 {
		return 0
	}
	return *tg.MaxRunDuration
}

// runStart is when the allocation started running: now, or for a
// restored allocation the earliest start of its tasks.
func (ar *AllocRunner) runStart() time.Time {
	start := time.Now()
	for _, e := range ar.tasks {
		if s := e.tr.State().StartedAt; !s.IsZero() && s.Before(start) {
			start = s
		}
	}
	return start
}

// maxRunExceeded reports whether the allocation was stopped by its
// max_run_duration.
func (ar *AllocRunner) maxRunExceeded() bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.maxRunHit
}

// watchMaxRun kills the allocation once its max_run_duration elapsed; it
// returns when the allocation is killed for any reason, detached or done.
// Updates (maxRunCh) recompute the deadline.
func (ar *AllocRunner) watchMaxRun(start time.Time) {
	for {
		var fire <-chan time.Time
		var timer *time.Timer
		if d := ar.maxRunOf(); d > 0 {
			left := d - time.Since(start)
			if left <= 0 {
				ar.mu.Lock()
				ar.maxRunHit = true
				ar.mu.Unlock()
				ar.logger.Info("stopping the allocation: it exceeded its max_run_duration", "max_run_duration", d)
				ar.Kill(MaxRunExceededDesc)
				return
			}
			timer = time.NewTimer(left)
			fire = timer.C
		}
		select {
		case <-fire:
			continue
		case <-ar.maxRunCh:
		case <-ar.killCh:
		case <-ar.detachCh:
		case <-ar.waitCh:
		}
		if timer != nil {
			timer.Stop()
		}
		if isClosed(ar.killCh) || isClosed(ar.detachCh) || isClosed(ar.waitCh) {
			return
		}
	}
}

// pokeMaxRun tells the watcher the allocation (its job) changed.
func (ar *AllocRunner) pokeMaxRun() {
	select {
	case ar.maxRunCh <- struct{}{}:
	default:
	}
}
