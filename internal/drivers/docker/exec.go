package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/drover-project/drover/internal/drivers"
)

var _ drivers.ExecDriver = (*Driver)(nil)

// ExecTask implements drivers.ExecDriver with the engine's exec API: the
// command runs in the container, with the task's environment, its streams
// attached.
func (d *Driver) ExecTask(ctx context.Context, taskID string, opts drivers.ExecOptions) (int, error) {
	h, err := d.get(taskID)
	if err != nil {
		return -1, err
	}
	if len(opts.Command) == 0 {
		return -1, errors.New("exec: a command is required")
	}
	if h.exited() {
		return -1, fmt.Errorf("task %q has exited", taskID)
	}
	cli := h.cli
	created, err := cli.ContainerExecCreate(ctx, h.state.ContainerID, container.ExecOptions{
		Cmd: opts.Command, Tty: opts.Tty,
		AttachStdin: opts.Stdin != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return -1, fmt.Errorf("exec in container %s: %w", shortID(h.state.ContainerID), err)
	}
	att, err := cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{Tty: opts.Tty})
	if err != nil {
		return -1, fmt.Errorf("exec attach: %w", err)
	}
	defer att.Close()

	if opts.Stdin != nil {
		go func() {
			_, _ = io.Copy(att.Conn, opts.Stdin)
			_ = att.CloseWrite()
		}()
	}
	if opts.Tty && opts.Resize != nil {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case sz, ok := <-opts.Resize:
					if !ok {
						return
					}
					_ = cli.ContainerExecResize(ctx, created.ID, container.ResizeOptions{Height: sz.Height, Width: sz.Width})
				}
			}
		}()
	}
	stdout, stderr := opts.Stdout, opts.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	copied := make(chan error, 1)
	go func() {
		var err error
		if opts.Tty {
			_, err = io.Copy(stdout, att.Reader)
		} else {
			_, err = stdcopy.StdCopy(stdout, stderr, att.Reader)
		}
		copied <- err
	}()
	select {
	case err := <-copied:
		if err != nil && !errors.Is(err, io.EOF) {
			return -1, fmt.Errorf("exec output: %w", err)
		}
	case <-ctx.Done():
		// The engine does not end an exec whose caller went away: the
		// command (a shell, `tail -f`) would run on in the container.
		d.killExec(h, created.ID)
		return -1, ctx.Err()
	}
	// The engine may record the exit a moment after the output ends.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ins, err := cli.ContainerExecInspect(ctx, created.ID)
		if err != nil {
			return -1, fmt.Errorf("exec inspect: %w", err)
		}
		if !ins.Running {
			return ins.ExitCode, nil
		}
		if time.Now().After(deadline) {
			return -1, errors.New("exec: output ended but the command is still running")
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// killExec SIGKILLs an exec's process that still runs. The engine gives its
// host PID and has no call to end an exec; the PID is signalled only when
// its cgroup names the task's container, so an engine on another host, or
// in another PID namespace than the agent, never gets an unrelated local
// process killed.
func (d *Driver) killExec(h *taskHandle, execID string) {
	ctx, cancel := context.WithTimeout(context.Background(), h.callTimeout)
	defer cancel()
	// The engine records the PID a moment after the command's output
	// may have begun.
	var ins container.ExecInspect
	for {
		var err error
		ins, err = h.cli.ContainerExecInspect(ctx, execID)
		if err != nil || !ins.Running {
			return
		}
		if ins.Pid > 0 {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", ins.Pid))
	if err != nil || !strings.Contains(string(cg), h.state.ContainerID) {
		d.logger.Debug("exec left running: its process is not visible as the container's here", "exec", shortID(execID), "pid", ins.Pid)
		return
	}
	if err := syscall.Kill(ins.Pid, syscall.SIGKILL); err != nil {
		d.logger.Debug("exec not killed", "exec", shortID(execID), "pid", ins.Pid, "error", err)
	}
}
