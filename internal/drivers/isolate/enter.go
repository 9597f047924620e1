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
	// Caps is the task's capability set: the command gets no other.
	Caps []string
}

// EnterKeepsCaps reports whether this build runs alloc exec with the
// task's capability set (cgo builds); without it, exec into a task running
// as root is refused.
const EnterKeepsCaps = enterInC

// Cmd builds the process: this binary as EnterCommand joins the task's
// cgroups, its mount, UTS, IPC and PID namespaces and its root, drops the
// capabilities outside the task's set and runs the command as the task's
// user. Joining a mount namespace needs a single-threaded process, which
// a Go program never is: with cgo the binary does it in C before its Go
// runtime starts; without, through util-linux's nsenter (which cannot
// apply the capability set).
func (e *Enter) Cmd() (*exec.Cmd, error) {
	if len(e.Command) == 0 {
		return nil, errors.New("exec: a command is required")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if enterInC {
		ns := []string{"uts", "mnt"}
		if !e.HostIPC {
			ns = append(ns, "ipc")
		}
		if !e.HostPID {
			ns = append(ns, "pid")
		}
		var mask uint64
		for _, c := range e.Caps {
			if n := CapNumber(c); n >= 0 {
				mask |= 1 << uint(n)
			}
		}
		uid, gid := 0, 0
		if e.Cred != nil {
			uid, gid = e.Cred.Uid, e.Cred.Gid
		}
		env := append(append([]string(nil), e.Env...),
			"_DROVER_ENTER_PID="+strconv.Itoa(e.PID), "_DROVER_ENTER_NS="+strings.Join(ns, ","),
			"_DROVER_ENTER_CGROUPS="+strings.Join(e.Cgroups, ":"),
			"_DROVER_ENTER_UID="+strconv.Itoa(uid), "_DROVER_ENTER_GID="+strconv.Itoa(gid),
			"_DROVER_ENTER_CAPS="+strconv.FormatUint(mask, 16))
		return &exec.Cmd{Path: exe, Args: append([]string{exe, EnterCommand}, e.Command...), Env: env, Dir: "/"}, nil
	}
	if e.Cred == nil || e.Cred.Uid == 0 {
		// nsenter would hand root's full capability set to the command.
		return nil, errors.New("exec into a task running as root needs a drover built with cgo (to keep the task's capability set)")
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
