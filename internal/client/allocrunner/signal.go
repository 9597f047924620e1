package allocrunner

import (
	"errors"
	"fmt"

	"github.com/drover-project/drover/internal/structs"
)

// SignalTasks sends sig to the named task, or to every running task when
// task is empty. A task that is not running is an error.
func (ar *AllocRunner) SignalTasks(task, sig string) error {
	var errs []error
	found := false
	for _, e := range ar.tasks {
		name := e.tr.Task().Name
		if task != "" && name != task {
			continue
		}
		if task == "" && e.tr.State().State != structs.TaskStateRunning {
			continue
		}
		found = true
		if err := e.tr.Signal(sig, ""); err != nil {
			errs = append(errs, fmt.Errorf("task %q: %w", name, err))
		}
	}
	if task != "" && !found {
		return fmt.Errorf("task %q: no such task", task)
	}
	if !found {
		return errors.New("no task is running")
	}
	return errors.Join(errs...)
}

// HasTask reports whether the allocation has the named task.
func (ar *AllocRunner) HasTask(task string) bool {
	for _, e := range ar.tasks {
		if e.tr.Task().Name == task {
			return true
		}
	}
	return false
}

// AnyTaskRunning reports whether one of the allocation's tasks runs.
func (ar *AllocRunner) AnyTaskRunning() bool {
	for _, e := range ar.tasks {
		if e.tr.State().State == structs.TaskStateRunning {
			return true
		}
	}
	return false
}

// TaskNames lists the allocation's tasks in the job's order.
func (ar *AllocRunner) TaskNames() []string {
	out := make([]string, 0, len(ar.tasks))
	for _, e := range ar.tasks {
		out = append(out, e.tr.Task().Name)
	}
	return out
}
