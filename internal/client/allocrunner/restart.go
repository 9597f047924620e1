package allocrunner

import (
	"errors"
	"fmt"

	"github.com/drover-project/drover/internal/client/taskrunner"
	"github.com/drover-project/drover/internal/structs"
)

// TakeRestartIndex reports whether index is a restart request this runner
// has not handled yet, and marks it handled.
func (ar *AllocRunner) TakeRestartIndex(index uint64) bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if index <= ar.restartIndex {
		return false
	}
	ar.restartIndex = index
	return true
}

// RestartTasks restarts the named tasks (every running one when tasks is
// empty) in place. A named task that is not running gets a Restart
// Signaled event saying so, so whoever asked sees an answer in its state.
func (ar *AllocRunner) RestartTasks(tasks []string, reason string, index uint64) error {
	want := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		want[t] = true
	}
	var errs []error
	for _, e := range ar.tasks {
		name := e.tr.Task().Name
		if len(tasks) > 0 && !want[name] {
			continue
		}
		if len(tasks) == 0 && e.tr.State().State != structs.TaskStateRunning {
			continue
		}
		delete(want, name)
		err := e.tr.Restart(reason, index)
		if errors.Is(err, taskrunner.ErrTaskNotRunning) {
			ev := e.tr.NewEvent(structs.TaskRestartSignaled, "Task not running: not restarted")
			ev.Details = map[string]string{structs.TaskEventDetailRestartIndex: fmt.Sprint(index)}
			e.tr.EmitEvent(ev)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("task %q: %w", name, err))
		}
	}
	for name := range want {
		errs = append(errs, fmt.Errorf("task %q: no such task", name))
	}
	return errors.Join(errs...)
}
