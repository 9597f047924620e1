package isolate

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Enter describes a command to run inside a running task (alloc exec).
type Enter struct {
	// PID is the task's main process (PID 1 of its namespace) on the host.
	PID int
	// Cgroups the command joins, so the task's limits cover it.
	Cgroups []string
	Cred    *Cred
	HostPID bool
	HostIPC bool
	Env     []string
	Command []string
}

// Cmd builds the process: this binary as EnterCommand joins the
// cgroups and execs util-linux's nsenter into the task's mount, UTS, IPC
// and PID namespaces, its root and working directory, as the task's user.
// nsenter is used because joining a mount namespace needs a
// single-threaded process, which a Go program never is.
func (e *Enter) Cmd() (*exec.Cmd, error) {
	if len(e.Command) == 0 {
		return nil, errors.New("exec: a command is required")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, fmt.Errorf("exec into an isolated task needs util-linux's nsenter: %w", err)
	}
	args := []string{exe, EnterCommand, strings.Join(e.Cgroups, ","), nsenter,
		"--target", strconv.Itoa(e.PID), "--mount", "--uts", "--root", "--wd"}
	if !e.HostIPC {
		args = append(args, "--ipc")
	}
	if !e.HostPID {
		args = append(args, "--pid")
	}
	if e.Cred != nil {
		args = append(args, "--setuid", strconv.Itoa(e.Cred.Uid), "--setgid", strconv.Itoa(e.Cred.Gid))
	}
	args = append(args, "--")
	args = append(args, e.Command...)
	return &exec.Cmd{Path: exe, Args: args, Env: e.Env, Dir: "/"}, nil
}

// enterMain: args are the comma-separated cgroup dirs, then nsenter's argv.
func enterMain(args []string) error {
	if len(args) < 2 {
		return errors.New("usage: " + EnterCommand + " <cgroups> <nsenter> args...")
	}
	for _, cg := range strings.Split(args[0], ",") {
		if cg == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte("0"), 0); err != nil {
			return fmt.Errorf("join cgroup %s: %w", cg, err)
		}
	}
	return syscall.Exec(args[1], args[1:], os.Environ())
}
