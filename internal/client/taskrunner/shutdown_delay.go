package taskrunner

import (
	"fmt"
	"time"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

// Stopping a running task, as Nomad does: first the pre-kill step (the
// allocation runner deregisters the task's services), then the task's
// shutdown_delay so that callers stop sending it traffic, and only then
// the kill signal. A stop that asked for no shutdown delay
// (DesiredTransition.NoShutdownDelay, `-no-shutdown-delay`) skips the wait
// and says so in an event; such a stop arriving while the delay runs (a
// second `job stop -no-shutdown-delay`, or the agent told twice to shut
// down) ends it at once (SkipShutdownDelay). A task that exits during the
// delay is not signalled.

// SkipShutdownDelay ends the task's shutdown_delay if it is being waited
// and skips it if it is yet to come. Idempotent.
func (tr *TaskRunner) SkipShutdownDelay() {
	tr.skipDelayOnce.Do(func() { close(tr.skipDelayCh) })
}

// preKill runs the pre-kill step and waits out the shutdown delay. It
// returns the task's exit when the task ended during the wait, nil when the
// task must now be signalled.
func (tr *TaskRunner) preKill(waitCh <-chan *drivers.ExitResult) (*drivers.ExitResult, bool) {
	if tr.cfg.PreKill != nil {
		tr.cfg.PreKill()
	}
	delay := tr.newestTask().ShutdownDelay
	if delay <= 0 {
		return nil, false
	}
	tr.mu.Lock()
	skip := tr.alloc != nil && tr.alloc.DesiredTransition.ShouldIgnoreShutdownDelay()
	tr.mu.Unlock()
	if skip || isDone(tr.skipDelayCh) {
		tr.EmitEvent(tr.newEvent(structs.TaskSkippingShutdownDelay,
			fmt.Sprintf("Skipping shutdown_delay of %s before killing the task.", delay)))
		return nil, false
	}
	tr.EmitEvent(tr.newEvent(structs.TaskWaitingShuttingDownDelay,
		fmt.Sprintf("Waiting for shutdown_delay of %s before killing the task.", delay)))
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil, false
	case res := <-waitCh:
		return res, true
	case <-tr.skipDelayCh:
		tr.EmitEvent(tr.newEvent(structs.TaskSkippingShutdownDelay,
			"Skipping the rest of the shutdown_delay before killing the task."))
		return nil, false
	case <-tr.detachCh:
		// The client shuts down leaving its tasks running: the next
		// client finds the stop again and starts over.
		return nil, false
	}
}
