package client

import (
	"context"
	"errors"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

// execTarget finds the running task a command is to run in and its
// driver's exec ability; every refusal is a coded 4xx that says why.
func (c *Client) execTarget(allocID, task string) (drivers.ExecDriver, error) {
	ar, err := c.getAllocRunner(allocID)
	if err != nil {
		return nil, structs.NewErrCoded(404, "Unknown allocation %q", allocID) // Nomad's words
	}
	a := ar.Alloc()
	var t *structs.Task
	if a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
			t = tg.LookupTask(task)
		}
	}
	if t == nil {
		return nil, structs.NewErrCoded(404, "task %q not found in allocation %s", task, allocID)
	}
	st := ar.TaskState(task)
	if st == nil || st.State != structs.TaskStateRunning {
		state := "pending"
		if st != nil {
			state = st.State
		}
		return nil, structs.NewErrCoded(400, "task %q is not running (it is %s)", task, state)
	}
	ed, ok := c.driverSet()[t.Driver].(drivers.ExecDriver)
	if !ok {
		return nil, structs.NewErrCoded(400, "task %q uses the %s driver, which cannot run commands in a task", task, t.Driver)
	}
	return ed, nil
}

// AllocExec runs a command inside a running task (`alloc exec`) and
// returns its exit code.
func (c *Client) AllocExec(ctx context.Context, allocID, task string, opts drivers.ExecOptions) (int, error) {
	ed, err := c.execTarget(allocID, task)
	if err != nil {
		return -1, err
	}
	code, err := ed.ExecTask(ctx, allocID+"/"+task, opts)
	if errors.Is(err, drivers.ErrTaskNotFound) {
		return -1, structs.NewErrCoded(400, "task %q is not running", task)
	}
	return code, err
}

// ExecOnHost reports whether a command exec'ed into the task runs on the
// host's filesystem: its driver isolates nothing (raw_exec). As Nomad,
// such an exec needs alloc-node-exec besides alloc-exec. ns is the
// allocation's namespace; an unknown allocation or task answers false
// (AllocExec then refuses it with the reason).
func (c *Client) ExecOnHost(allocID, task string) (ns string, onHost bool) {
	ar, err := c.getAllocRunner(allocID)
	if err != nil {
		return "", false
	}
	a := ar.Alloc()
	if a.Job == nil {
		return a.Namespace, false
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return a.Namespace, false
	}
	t := tg.LookupTask(task)
	return a.Namespace, t != nil && !fsIsolatingDrivers[t.Driver]
}

// fsIsolatingDrivers are the drivers whose tasks see their own root
// filesystem (containers, chroots, virtual machines).
var fsIsolatingDrivers = map[string]bool{
	"docker": true, "podman": true, "exec": true, "java": true, "qemu": true, "mock_driver": true,
}
