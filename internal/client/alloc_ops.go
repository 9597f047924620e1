package client

import (
	"errors"
	"strings"

	"github.com/drover-project/drover/internal/client/taskrunner"
	"github.com/drover-project/drover/internal/structs"
)

// AllocRestart restarts an allocation's tasks in place (`alloc restart`):
// the named task, or every running task. allTasks asks for every task,
// which is the same while every task runs; Nomad also runs completed
// lifecycle tasks again, which Drover does not do yet, so allTasks with a
// task that is not running is refused, naming it. Each restart records
// Restart Signaled then Restarting and counts in the task's restarts.
// Refusals are coded 4xx errors.
func (c *Client) AllocRestart(allocID, task string, allTasks bool) error {
	if task != "" && allTasks {
		return structs.NewErrCoded(400, "task name cannot be set when all tasks are restarted")
	}
	ar, err := c.getAllocRunner(allocID)
	if err != nil {
		return structs.NewErrCoded(404, "Unknown allocation %q", allocID)
	}
	var tasks []string
	if task != "" {
		if !ar.HasTask(task) {
			return structs.NewErrCoded(404, "task %q not found in allocation %s", task, allocID)
		}
		tasks = []string{task}
	} else if allTasks {
		for _, name := range ar.TaskNames() {
			if st := ar.TaskState(name); st == nil || st.State != structs.TaskStateRunning {
				return structs.NewErrCoded(400, "restarting all tasks would run task %q again, which is not running; Drover cannot run a finished task again yet: restart the running tasks (without all tasks)", name)
			}
		}
	} else if !ar.AnyTaskRunning() {
		return structs.NewErrCoded(400, "no task of allocation %s is running", allocID)
	}
	if err := ar.RestartTasks(tasks, "User requested restart", 0); err != nil {
		return opError(err)
	}
	return nil
}

// AllocSignal sends a signal to an allocation's task, or to every running
// task (`alloc signal`). An empty signal is SIGKILL, as Nomad's.
func (c *Client) AllocSignal(allocID, task, sig string) error {
	ar, err := c.getAllocRunner(allocID)
	if err != nil {
		return structs.NewErrCoded(404, "Unknown allocation %q", allocID)
	}
	if sig == "" {
		sig = "SIGKILL"
	}
	if task != "" && !ar.HasTask(task) {
		return structs.NewErrCoded(404, "task %q not found in allocation %s", task, allocID)
	}
	if err := ar.SignalTasks(task, sig); err != nil {
		return opError(err)
	}
	return nil
}

// opError makes a task operation's failure a 400 that says which task and
// why (not running, a signal the driver does not know).
func opError(err error) error {
	msg := err.Error()
	if errors.Is(err, taskrunner.ErrTaskNotRunning) {
		msg = strings.ReplaceAll(msg, taskrunner.ErrTaskNotRunning.Error(), "task is not running")
	}
	return structs.NewErrCoded(400, "%s", msg)
}
