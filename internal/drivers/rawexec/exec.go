package rawexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/drover-project/drover/internal/drivers"
)

// ExecTask implements drivers.ExecDriver: the command runs as the task
// runs, from the spec its shim was given (environment, task directory,
// user, cgroup), so it is killed with the task. The agent, not the shim,
// is its parent: an exec session lives only as long as the agent's
// request that carries it. With Tty the command gets a pseudo-terminal as
// its controlling terminal (stdout and stderr merged, resizes applied).
func (d *Driver) ExecTask(ctx context.Context, taskID string, opts drivers.ExecOptions) (int, error) {
	h, err := d.get(taskID)
	if err != nil {
		return -1, err
	}
	if h.exited() {
		return -1, fmt.Errorf("task %q has exited", taskID)
	}
	if len(opts.Command) == 0 || opts.Command[0] == "" {
		return -1, errors.New("exec: a command is required")
	}
	var spec shimSpec
	if err := readJSON(filepath.Join(h.shimDir, shimSpecFile), &spec); err != nil {
		return -1, fmt.Errorf("exec: read the task's spec: %w", err)
	}
	env := map[string]string{}
	for _, kv := range spec.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	path, err := resolveCommand(opts.Command[0], spec.Dir, env)
	if err != nil {
		return -1, err
	}
	if _, err := os.Stat(path); err != nil {
		return -1, fmt.Errorf("exec: %s: %w", opts.Command[0], err)
	}
	cmd := &exec.Cmd{Path: path, Args: opts.Command, Env: spec.Env, Dir: spec.Dir,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Credential: spec.User.credential()}}
	// The cgroup is the task's (spec.Cgroup may have been replaced by a
	// restore; the handle's is current).
	cg := h.cg

	if opts.Tty {
		return d.execTTY(ctx, cmd, cg, spec.NetNS, opts)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return -1, err
	}
	cmd.Stdout, cmd.Stderr = orDiscard(opts.Stdout), orDiscard(opts.Stderr)
	cmd.WaitDelay = time.Second
	if err := cg.startIn(cmd, spec.NetNS); err != nil {
		return -1, fmt.Errorf("exec: start %s: %w", path, err)
	}
	go func() {
		if opts.Stdin != nil {
			_, _ = io.Copy(stdin, opts.Stdin)
		}
		stdin.Close()
	}()
	return waitExec(ctx, cmd)
}

func (d *Driver) execTTY(ctx context.Context, cmd *exec.Cmd, cg *taskCgroup, netns string, opts drivers.ExecOptions) (int, error) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		return -1, fmt.Errorf("exec: open a terminal: %w", err)
	}
	defer ptmx.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = 0 // the child's fd 0
	err = cg.startIn(cmd, netns)
	tty.Close()
	if err != nil {
		return -1, fmt.Errorf("exec: start %s: %w", cmd.Path, err)
	}
	// The resizer reads the terminal's descriptor (Fd), which races with
	// its Close: it has ended before the deferred Close runs.
	stopResize, resized := make(chan struct{}), make(chan struct{})
	defer func() { close(stopResize); <-resized }()
	go func() {
		defer close(resized)
		for {
			select {
			case <-ctx.Done():
				return
			case <-stopResize:
				return
			case sz, ok := <-opts.Resize:
				if !ok {
					return
				}
				_ = pty.Setsize(ptmx, &pty.Winsize{Rows: uint16(sz.Height), Cols: uint16(sz.Width)})
			}
		}
	}()
	if opts.Stdin != nil {
		go func() { _, _ = io.Copy(ptmx, opts.Stdin) }()
	}
	copied := make(chan struct{})
	go func() {
		// EIO once every holder of the terminal is gone.
		_, _ = io.Copy(orDiscard(opts.Stdout), ptmx)
		close(copied)
	}()
	code, err := waitExec(ctx, cmd)
	select {
	case <-copied:
	case <-time.After(time.Second):
		// Something the command left behind keeps the terminal open.
	}
	return code, err
}

// waitExec waits for the command; a cancelled ctx kills its session.
func waitExec(ctx context.Context, cmd *exec.Cmd) (int, error) {
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	case errors.Is(err, exec.ErrWaitDelay):
		return cmd.ProcessState.ExitCode(), nil
	}
	return -1, err
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
