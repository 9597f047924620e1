package rawexec

import (
	"fmt"
	"os/exec"
	"runtime"

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
		// cgroup v1: this thread joins the task's v1 cgroups too (see
		// start), and leaves them before it is retired.
		leave, err := c.enterThread()
		if err != nil {
			errc <- err
			return
		}
		err = c.startOnThread(cmd)
		_ = leave()
		errc <- err
	}()
	return <-errc
}
