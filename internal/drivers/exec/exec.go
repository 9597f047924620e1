package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/isolate"
)

// ExecTask implements drivers.ExecDriver: the command runs inside the
// task's namespaces and root, in its cgroups, as its user, with its
// environment.
func (d *Driver) ExecTask(ctx context.Context, taskID string, opts drivers.ExecOptions) (int, error) {
	t, err := d.get(taskID)
	if err != nil {
		return -1, err
	}
	if len(opts.Command) == 0 {
		return -1, errors.New("exec: a command is required")
	}
	if _, err := d.inner.MainPID(taskID); err != nil {
		return -1, err
	}
	if t.noEnter != nil {
		return -1, t.noEnter
	}
	sp := t.spec
	e := &isolate.Enter{StateRoot: sp.StateRoot, ID: sp.ID, Cred: sp.Cred, Env: sp.Env, Command: opts.Command, Caps: sp.Caps}
	cmd, err := e.Cmd()
	if err != nil {
		return -1, err
	}
	// What the command leaves running in the task may hold its output
	// open: the exec ends with the command all the same.
	cmd.WaitDelay = time.Second
	if opts.Tty {
		return runTty(ctx, cmd, opts)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = opts.Stdin, opts.Stdout, opts.Stderr
	if cmd.Stdout == nil {
		cmd.Stdout = io.Discard
	}
	if cmd.Stderr == nil {
		cmd.Stderr = io.Discard
	}
	return run(ctx, cmd)
}

func run(ctx context.Context, cmd *osexec.Cmd) (int, error) {
	if err := cmd.Start(); err != nil {
		return -1, fmt.Errorf("exec: %w", err)
	}
	return wait(ctx, cmd)
}

func wait(ctx context.Context, cmd *osexec.Cmd) (int, error) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitCode(err)
	case <-ctx.Done():
		// The helper kills the command inside the task, then exits; if it
		// does not, it is killed (and the command left to the task).
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		return -1, ctx.Err()
	}
}

func exitCode(err error) (int, error) {
	if err == nil {
		return 0, nil
	}
	var ee *osexec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return -1, err
}

// runTty runs cmd on a new pseudo-terminal whose master end carries the
// streams.
func runTty(ctx context.Context, cmd *osexec.Cmd, opts drivers.ExecOptions) (int, error) {
	master, slave, err := openPty()
	if err != nil {
		return -1, fmt.Errorf("exec: allocate a terminal: %w", err)
	}
	defer master.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err = cmd.Start()
	slave.Close()
	if err != nil {
		return -1, fmt.Errorf("exec: %w", err)
	}
	if opts.Stdin != nil {
		go func() { _, _ = io.Copy(master, opts.Stdin) }()
	}
	if opts.Resize != nil {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case sz, ok := <-opts.Resize:
					if !ok {
						return
					}
					_ = unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(sz.Height), Col: uint16(sz.Width)})
				}
			}
		}()
	}
	out := opts.Stdout
	if out == nil {
		out = io.Discard
	}
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(out, master); close(copied) }() // EIO once the terminal closes
	code, err := wait(ctx, cmd)
	<-copied
	return code, err
}

func openPty() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, err
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, s, nil
}
