package taskrunner

import (
	"github.com/drover-project/drover/internal/structs"
)

// TaskSignaling is Nomad's event type for `alloc signal`.
const TaskSignaling = "Signaling"

// Signal sends a signal to a running task (Nomad's `alloc signal`),
// recording a Signaling event first so the operator sees it was asked.
// A bad signal name is the driver's error, returned as is.
func (tr *TaskRunner) Signal(sig, reason string) error {
	tr.mu.Lock()
	running := tr.state.State == structs.TaskStateRunning
	tr.mu.Unlock()
	if !running || tr.killed() {
		return ErrTaskNotRunning
	}
	if reason == "" {
		reason = "User requested signal"
	}
	msg := "Task being sent signal " + sig + ": " + reason
	ev := tr.newEvent(TaskSignaling, msg)
	ev.TaskSignal = sig
	ev.TaskSignalReason = reason
	if err := tr.cfg.Driver.SignalTask(tr.taskID, sig); err != nil {
		return err
	}
	tr.appendEvent(ev)
	tr.notify()
	return nil
}
