package rawexec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// startIn starts cmd in its cgroup, inside the network namespace at netns
// when one is given (a bridge-mode group's): as Nomad's executor does, the
// process is forked from an OS thread that first joined the namespace, so
// it is born inside it. The thread never runs anything else: its goroutine
// returns still locked and the runtime retires it.
func (c *taskCgroup) startIn(cmd *exec.Cmd, netns string) error {
	if netns == "" {
		return c.start(cmd)
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Deliberately never unlocked: the thread leaves with its goroutine.
		fd, err := unix.Open(netns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open network namespace: %w", err)
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			errc <- fmt.Errorf("join network namespace %s: %w", netns, err)
			return
		}
		if c == nil || c.Kind == cgV2 {
			errc <- c.start(cmd)
			return
		}
		// cgroup v1: this thread joins the freezer cgroup too (see start).
		home, err := threadFreezerCgroup(c.Root)
		if err != nil {
			errc <- err
			return
		}
		tid := []byte(strconv.Itoa(syscall.Gettid()))
		if err := os.WriteFile(filepath.Join(c.Path, "tasks"), tid, 0); err != nil {
			errc <- fmt.Errorf("join task cgroup: %w", err)
			return
		}
		err = cmd.Start()
		_ = os.WriteFile(filepath.Join(home, "tasks"), tid, 0)
		errc <- err
	}()
	return <-errc
}
