package allocrunner

import (
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Kill order (Nomad's): the leader task first, then the other tasks that
// are not sidecars, then the sidecars (prestart or poststart with sidecar =
// true), each tier waited for before the next, so that a sidecar such as a
// proxy outlives the tasks that use it. Poststop tasks are never killed
// here: they run after the others ended.

const (
	killTierLeader = iota
	killTierMain
	killTierSidecar
	killTierNone
)

func (e *taskEntry) killTier() int {
	switch {
	case e.phase == phasePoststop:
		return killTierNone
	case e.tr.Task().Leader:
		return killTierLeader
	case e.phase == phasePrestartSidecar,
		e.phase == phasePoststart && e.tr.Task().Lifecycle != nil && e.tr.Task().Lifecycle.Sidecar:
		return killTierSidecar
	default:
		return killTierMain
	}
}

// killInOrder kills every task but the poststop ones, tier by tier, and
// returns once they all ended (or the runner detached). Killing a task
// twice is harmless, so concurrent callers keep the order.
func (ar *AllocRunner) killInOrder(reason string) {
	if isClosed(ar.killCh) {
		ar.groupPreKill()
	}
	for tier := killTierLeader; tier < killTierNone; tier++ {
		var killed []*taskEntry
		for _, e := range ar.tasks {
			if e.killTier() == tier {
				e.tr.Kill(reason)
				killed = append(killed, e)
			}
		}
		for _, e := range killed {
			select {
			case <-e.tr.WaitCh():
			case <-ar.detachCh:
				return
			}
		}
	}
}

// SkipShutdownDelay ends the group's and every task's shutdown_delay now
// if it is being waited, and skips it if it is yet to come: a stop with
// no_shutdown_delay arrived while the allocation was already stopping, or
// the agent was told again to shut down. Idempotent.
func (ar *AllocRunner) SkipShutdownDelay() {
	ar.skipDelayOnce.Do(func() { close(ar.skipDelayCh) })
	for _, e := range ar.tasks {
		e.tr.SkipShutdownDelay()
	}
}

// groupPreKill is the allocation's pre-kill step when it is stopped (once;
// concurrent callers wait for it): the group's services are deregistered,
// then the group's shutdown_delay runs before any task is told to stop,
// unless the stop asked for none. The client shutting down (detach) or
// SkipShutdownDelay ends the wait.
func (ar *AllocRunner) groupPreKill() {
	ar.preKillOnce.Do(func() {
		ar.mu.Lock()
		a := ar.alloc
		ar.mu.Unlock()
		ar.dropServices("")
		tg := a.Job.LookupTaskGroup(a.TaskGroup)
		if tg == nil || tg.ShutdownDelay == nil || *tg.ShutdownDelay <= 0 || a.DesiredTransition.ShouldIgnoreShutdownDelay() ||
			isClosed(ar.skipDelayCh) {
			return
		}
		if !ar.anyTaskRunning() {
			return // nothing serves traffic that the delay would drain
		}
		ar.logger.Debug("waiting for the group's shutdown_delay before killing tasks", "shutdown_delay", *tg.ShutdownDelay)
		timer := time.NewTimer(*tg.ShutdownDelay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ar.detachCh:
		case <-ar.skipDelayCh:
			ar.logger.Debug("the rest of the group's shutdown_delay is skipped")
		}
	})
}

func (ar *AllocRunner) anyTaskRunning() bool {
	for _, e := range ar.tasks {
		if e.tr.State().State == structs.TaskStateRunning {
			return true
		}
	}
	return false
}
