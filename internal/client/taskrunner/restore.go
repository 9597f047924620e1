package taskrunner

import (
	"errors"

	"github.com/drover-project/drover/internal/client/state"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

// TaskRestoreFailed is Nomad's event for a task the client could not
// re-attach to after a restart (the task is then started again).
const TaskRestoreFailed = "Failed Restoring Task"

// StateDB is where a runner persists what a restarted client needs: the
// task's state and its local state (driver handle, restart tracker).
type StateDB interface {
	PutTaskState(allocID, task string, s *structs.TaskState) error
	PutTaskLocalState(allocID, task string, s *state.LocalTaskState) error
}

// errDetached ends a run whose runner was detached from its task.
var errDetached = errors.New("task runner detached")

// Restore loads what an earlier client process stored for this task. Call
// it before Run. A task that was running is re-attached through the
// driver's RecoverTask when Run starts (before the lifecycle gate: it had
// passed it already); one that had ended stays as it was.
func (tr *TaskRunner) Restore(ts *structs.TaskState, ls *state.LocalTaskState) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if ts != nil {
		tr.state = copyState(ts)
	}
	if ls != nil {
		tr.local = *ls
	}
	tr.restored = true
}

// Detach stops supervising the task without stopping it (the client shuts
// down and a later client re-attaches). Nothing more is persisted. Run
// returns soon after; wait on WaitCh.
func (tr *TaskRunner) Detach() {
	tr.detachOnce.Do(func() { close(tr.detachCh) })
}

func (tr *TaskRunner) detached() bool { return isDone(tr.detachCh) }

// restoredDead reports a restored task that had ended for good.
func (tr *TaskRunner) restoredDead() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.restored && tr.state.State == structs.TaskStateDead
}

// recoverTask re-attaches to the restored task's process; false when there
// is none to attach to (never started, or lost: then a Failed Restoring
// Task event says why and the task will be started again).
func (tr *TaskRunner) recoverTask() bool {
	tr.mu.Lock()
	h := tr.local.Handle
	tr.mu.Unlock()
	if !tr.restored || h == nil || tr.cfg.Driver == nil {
		return false
	}
	if err := tr.cfg.Driver.RecoverTask(h); err != nil {
		tr.logger.Warn("failed to restore task", "error", err)
		tr.setHandle(nil)
		tr.mu.Lock()
		started := tr.state.State == structs.TaskStateRunning
		tr.mu.Unlock()
		if started || h.State != drivers.TaskStateStarting {
			ev := tr.newEvent(TaskRestoreFailed, "failed to restore task: "+err.Error())
			ev.DriverError = err.Error()
			tr.appendEvent(ev)
			tr.notify()
		}
		return false
	}
	tr.logger.Debug("task re-attached after client restart")
	return true
}

// cleanupRestoredDead releases a task that ended for good but whose handle
// was still stored (the client died before it could destroy it).
func (tr *TaskRunner) cleanupRestoredDead() {
	tr.mu.Lock()
	h := tr.local.Handle
	tr.mu.Unlock()
	if h == nil || tr.cfg.Driver == nil {
		return
	}
	if err := tr.cfg.Driver.RecoverTask(h); err == nil {
		if err := tr.cfg.Driver.DestroyTask(tr.taskID, true); err != nil && err != drivers.ErrTaskNotFound {
			tr.logger.Warn("failed to destroy task", "error", err)
		}
	}
	tr.setHandle(nil)
}

// setHandle records (nil: clears) the driver's handle and persists it at
// once: it is written before the task is reported running.
func (tr *TaskRunner) setHandle(h *drivers.TaskHandle) {
	tr.mu.Lock()
	tr.local.Handle = h
	ls := tr.local
	tr.mu.Unlock()
	tr.persistLocal(&ls)
}

// saveTracker persists the restart tracker after a decision.
func (tr *TaskRunner) saveTracker(rt *restartTracker) {
	tr.mu.Lock()
	tr.local.RestartIntervalStart, tr.local.RestartCount = rt.start, rt.count
	ls := tr.local
	tr.mu.Unlock()
	tr.persistLocal(&ls)
}

// restoreTracker loads the restored restart tracker into rt.
func (tr *TaskRunner) restoreTracker(rt *restartTracker) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	rt.start, rt.count = tr.local.RestartIntervalStart, tr.local.RestartCount
}

func (tr *TaskRunner) persistLocal(ls *state.LocalTaskState) {
	if tr.cfg.StateDB == nil || tr.detached() {
		return
	}
	if err := tr.cfg.StateDB.PutTaskLocalState(tr.cfg.Alloc.ID, tr.cfg.Task.Name, ls); err != nil {
		tr.logger.Error("failed to persist task handle", "error", err)
	}
}

// persistState stores the task's state (called on every change).
func (tr *TaskRunner) persistState() {
	if tr.cfg.StateDB == nil || tr.detached() {
		return
	}
	if err := tr.cfg.StateDB.PutTaskState(tr.cfg.Alloc.ID, tr.cfg.Task.Name, tr.State()); err != nil {
		tr.logger.Error("failed to persist task state", "error", err)
	}
}

// logConfig is set for drivers that write the log files themselves.
func (tr *TaskRunner) driverWritesLogs() bool {
	lw, ok := tr.cfg.Driver.(drivers.LogWriter)
	return ok && lw.WritesLogs()
}
