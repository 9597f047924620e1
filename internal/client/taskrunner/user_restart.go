package taskrunner

import (
	"errors"
	"fmt"

	"github.com/drover-project/drover/internal/structs"
)

// ErrTaskNotRunning is returned by Restart for a task that is not running.
var ErrTaskNotRunning = errors.New("task is not running")

// Restart restarts a running task in place (Nomad's `alloc restart`): it
// records a Restart Signaled event (details carry the request's index, 0
// for none), stops the task with its kill signal and timeout, and starts it
// again at once. The restart counts in Restarts but not against the
// restart policy.
func (tr *TaskRunner) Restart(reason string, index uint64) error {
	tr.mu.Lock()
	running := tr.state.State == structs.TaskStateRunning
	tr.mu.Unlock()
	if !running || tr.killed() {
		return ErrTaskNotRunning
	}
	if reason == "" {
		reason = "User requested restart"
	}
	tr.mu.Lock()
	tr.restartReason = reason
	tr.mu.Unlock()
	ev := tr.newEvent(structs.TaskRestartSignaled, reason)
	ev.RestartReason = reason
	ev.Details = map[string]string{structs.TaskEventDetailRestartIndex: fmt.Sprint(index)}
	tr.appendEvent(ev)
	tr.notify()
	select {
	case tr.restartCh <- struct{}{}:
	default: // one is already on its way
	}
	return nil
}

// stopForRestart stops the running task for an in-place restart and
// returns the driver's error (the caller retries a failed stop).
func (tr *TaskRunner) stopForRestart() error {
	tr.mu.Lock()
	tr.userRestart = true
	sig := tr.cfg.Task.KillSignal
	tr.mu.Unlock()
	err := tr.cfg.Driver.StopTask(tr.taskID, tr.killTimeout(), sig)
	if err != nil {
		tr.logger.Warn("failed to stop task for restart", "error", err)
	}
	return err
}

// takeUserRestart reports (once) that the last run ended for an in-place
// restart, counting it and recording Restarting.
func (tr *TaskRunner) takeUserRestart() bool {
	tr.mu.Lock()
	if !tr.userRestart {
		tr.mu.Unlock()
		return false
	}
	tr.userRestart = false
	tr.state.Restarts++
	tr.state.LastRestart = tr.now()
	reason := tr.restartReason
	tr.mu.Unlock()
	if reason == "" {
		reason = "User requested restart"
	}
	ev := tr.newEvent(structs.TaskRestarting, "Task restarting in 0s")
	ev.RestartReason = reason
	tr.setState(structs.TaskStatePending, ev)
	return true
}

// drainRestart drops a restart request that arrived while the task was not
// running: it must not end the next run.
func (tr *TaskRunner) drainRestart() {
	select {
	case <-tr.restartCh:
	default:
	}
}
