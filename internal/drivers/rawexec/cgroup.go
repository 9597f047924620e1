package rawexec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgKind is how tasks are tracked.
type cgKind string

const (
	cgNone     cgKind = "none"       // process group only
	cgV2       cgKind = "v2"         // cgroup v2 leaf, clone3 into it
	cgV1Freeze cgKind = "v1-freezer" // cgroup v1 freezer
)

const (
	cgroup2Magic = 0x63677270
	cgroup1Magic = 0x27e0eb
	// defaultParent is the cgroup under which task cgroups are created.
	defaultParent = "drover"
	pollInterval  = 20 * time.Millisecond
)

// cleanupTimeout bounds how long we wait for a killed cgroup to empty (and
// be removed); a variable for tests.
var cleanupTimeout = 10 * time.Second

// tracker is the driver-wide choice of how to track tasks.
type tracker struct {
	kind cgKind
	root string // mount point (or the test override) the task cgroups live under
	desc string // for the fingerprint
}

func fsMagic(path string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0
	}
	return int64(st.Type)
}

// detectTracker picks the best usable tracker. root overrides the mount
// (tests); disabled forces the process-group fallback.
func detectTracker(root string, disabled bool) tracker {
	if disabled {
		return tracker{kind: cgNone, desc: "cgroups disabled by configuration: tasks are tracked by process group only; processes that leave it (setsid, double fork) can survive a stop"}
	}
	var candidates []string
	if root != "" {
		candidates = []string{root}
	} else {
		candidates = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/freezer"}
	}
	var why []string
	for _, c := range candidates {
		kind := cgNone
		switch fsMagic(c) {
		case cgroup2Magic:
			kind = cgV2
		case cgroup1Magic:
			kind = cgV1Freeze
		default:
			why = append(why, c+": not a cgroup mount")
			continue
		}
		if err := probe(kind, c); err != nil {
			why = append(why, fmt.Sprintf("%s: %v", c, err))
			continue
		}
		return tracker{kind: kind, root: c, desc: fmt.Sprintf("tasks tracked in cgroup %s under %s", kind, filepath.Join(c, defaultParent))}
	}
	return tracker{kind: cgNone, desc: "no usable cgroup (" + strings.Join(why, "; ") +
		"): tasks are tracked by process group only; processes that leave it (setsid, double fork) can survive a stop"}
}

// probe checks that we can create and remove a task cgroup of this kind.
func probe(kind cgKind, root string) error {
	parent := filepath.Join(root, defaultParent)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	p, err := os.MkdirTemp(parent, "probe-")
	if err != nil {
		return err
	}
	defer os.Remove(p)
	need := "cgroup.procs"
	if kind == cgV1Freeze {
		need = "freezer.state"
	}
	if _, err := os.Stat(filepath.Join(p, need)); err != nil {
		return fmt.Errorf("no %s in a new cgroup", need)
	}
	return nil
}

// taskCgroup is one task's cgroup.
type taskCgroup struct {
	Kind  cgKind `json:"kind"`
	Root  string `json:"root"` // the hierarchy's mount point
	Path  string `json:"path"`
	Owned bool   `json:"owned"` // we created it and remove it on cleanup
	// Cpuset confines the task's CPUs (cpuset.go); nil: no cpuset cgroup.
	Cpuset *cpusetCgroup `json:"cpuset,omitempty"`
}

// newTaskCgroup creates the cgroup for a task. override, when set, names an
// existing (or to be created) cgroup chosen by the operator; it is not
// removed afterwards.
func (t tracker) newTaskCgroup(parent, name, override string) (*taskCgroup, error) {
	if t.kind == cgNone {
		return nil, nil
	}
	cg := &taskCgroup{Kind: t.kind, Root: t.root, Owned: true}
	if override != "" {
		cg.Owned = false
		if strings.HasPrefix(override, t.root+"/") {
			cg.Path = filepath.Clean(override)
		} else {
			cg.Path = filepath.Join(t.root, filepath.Clean("/"+override))
		}
	} else {
		if parent == "" {
			parent = defaultParent
		}
		cg.Path = filepath.Join(t.root, filepath.Clean("/"+parent), name)
	}
	if err := os.MkdirAll(cg.Path, 0o755); err != nil {
		return nil, fmt.Errorf("create task cgroup: %w", err)
	}
	return cg, nil
}

// start starts cmd inside the cgroup (cmd.SysProcAttr must be set).
func (c *taskCgroup) start(cmd *exec.Cmd) error {
	if c == nil {
		return cmd.Start()
	}
	if len(c.v1Dirs()) == 0 {
		return c.startOnThread(cmd) // clone3 into the v2 cgroup: any thread will do
	}
	// cgroup v1 has no clone-into-cgroup. Move one locked OS thread into
	// the task's v1 cgroups (the per-thread "tasks" files), fork from it so
	// the child is born in them before it runs any code, then move the
	// thread back. Threads the runtime creates meanwhile come from its
	// template thread, never from a locked one.
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		leave, err := c.enterThread()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		err = c.startOnThread(cmd)
		if berr := leave(); berr == nil {
			runtime.UnlockOSThread()
		} else if err == nil {
			// Stay locked: the runtime retires the thread when this
			// goroutine returns (the main thread is parked for good).
			err = fmt.Errorf("leave task cgroup: %w", berr)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		errc <- err
	}()
	return <-errc
}

// startOnThread starts cmd from the calling thread, which has joined the
// task's v1 cgroups (enterThread) if it has any; a v2 task cgroup is
// entered by clone3.
func (c *taskCgroup) startOnThread(cmd *exec.Cmd) error {
	if c == nil || c.Kind != cgV2 {
		return cmd.Start()
	}
	fd, err := syscall.Open(c.Path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open task cgroup: %w", err)
	}
	defer syscall.Close(fd)
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = fd
	return cmd.Start()
}

// v1Dir is a v1 cgroup a task's processes are forked into: its directory,
// and the hierarchy's mount and controller (to find the thread's own).
type v1Dir struct{ path, mount, controller string }

// v1Dirs are the task's v1 cgroups: the freezer (v1 tracking) and the
// cpuset (v1 cpuset hierarchy).
func (c *taskCgroup) v1Dirs() []v1Dir {
	var out []v1Dir
	if c == nil {
		return nil
	}
	if c.Kind == cgV1Freeze {
		out = append(out, v1Dir{c.Path, c.Root, "freezer"})
	}
	if c.Cpuset != nil && c.Cpuset.V1 {
		out = append(out, v1Dir{c.Cpuset.Path, cpusetMount, "cpuset"})
	}
	return out
}

// enterThread moves the calling (locked) OS thread into the task's v1
// cgroups and returns how to move it back where it was.
func (c *taskCgroup) enterThread() (leave func() error, err error) {
	tid := []byte(strconv.Itoa(syscall.Gettid()))
	var homes []string
	leave = func() error {
		var errs []error
		for _, h := range homes {
			if err := os.WriteFile(filepath.Join(h, "tasks"), tid, 0); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	for _, d := range c.v1Dirs() {
		home, err := threadCgroup(d.mount, d.controller)
		if err != nil {
			_ = leave()
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(d.path, "tasks"), tid, 0); err != nil {
			_ = leave()
			return nil, fmt.Errorf("join task cgroup %s: %w", d.path, err)
		}
		homes = append(homes, home)
	}
	return leave, nil
}

// threadCgroup returns the directory of the calling thread's cgroup of
// one v1 controller, under the hierarchy's mount.
func threadCgroup(mount, controller string) (string, error) {
	b, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, ctrl := range strings.Split(parts[1], ",") {
			if ctrl == controller {
				return filepath.Join(mount, filepath.Clean("/"+parts[2])), nil
			}
		}
	}
	return "", fmt.Errorf("calling thread has no %s cgroup", controller)
}

// pids lists the processes in the cgroup and in the cgroups the task made
// below it.
func (c *taskCgroup) pids() ([]int, error) {
	return treePids(c.Path)
}

// killAll SIGKILLs every process in the cgroup. Processes cannot escape
// while this runs: cgroup.kill is atomic, and the freeze path stops
// everything before reading the list.
func (c *taskCgroup) killAll() error {
	if c.Kind == cgV2 {
		err := os.WriteFile(filepath.Join(c.Path, "cgroup.kill"), []byte("1"), 0)
		if err == nil {
			return nil
		}
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := os.Stat(c.Path); serr != nil {
				return nil // the cgroup is gone: nothing left to kill
			}
		}
		// Kernels before 5.14 have no cgroup.kill: freeze, kill, thaw.
	}
	if err := c.setFrozen(true); err != nil {
		return err
	}
	pids, err := c.pids()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if terr := c.setFrozen(false); err == nil {
		err = terr
	}
	// A child cgroup the task froze itself stays frozen when its parent
	// thaws, and its killed processes with it.
	thawBelow(c.Path, c.Kind)
	return err
}

func (c *taskCgroup) setFrozen(frozen bool) error {
	var file, val, want string
	if c.Kind == cgV2 {
		file, val, want = "cgroup.freeze", "0", "frozen 0"
		if frozen {
			val, want = "1", "frozen 1"
		}
	} else {
		file, val, want = "freezer.state", "THAWED", "THAWED"
		if frozen {
			val, want = "FROZEN", "FROZEN"
		}
	}
	if err := os.WriteFile(filepath.Join(c.Path, file), []byte(val), 0); err != nil {
		return fmt.Errorf("set %s=%s: %w", file, val, err)
	}
	stateFile := "freezer.state"
	if c.Kind == cgV2 {
		stateFile = "cgroup.events"
	}
	deadline := time.Now().Add(cleanupTimeout)
	for {
		b, err := os.ReadFile(filepath.Join(c.Path, stateFile))
		if err != nil {
			return err
		}
		if strings.Contains(string(b), want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s did not reach %q", c.Path, want)
		}
		time.Sleep(pollInterval)
	}
}

// destroy kills everything in the cgroup and the cgroups below it, waits
// until they are empty and removes them (deepest first) when we own the
// cgroup. Safe to call more than once.
func (c *taskCgroup) destroy() error {
	if c == nil {
		return nil
	}
	if _, err := os.Stat(c.Path); errors.Is(err, os.ErrNotExist) {
		return c.Cpuset.remove()
	}
	deadline := time.Now().Add(cleanupTimeout)
	for {
		pids, err := c.pids()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s still has processes %v after %s", c.Path, pids, cleanupTimeout)
		}
		if err := c.killAll(); err != nil {
			return err
		}
		time.Sleep(pollInterval)
	}
	if err := c.Cpuset.remove(); err != nil {
		return err
	}
	if !c.Owned {
		return nil
	}
	if err := removeTree(c.Path, deadline); err != nil {
		return fmt.Errorf("remove cgroup: %w", err)
	}
	return nil
}

// join moves a process (an isolated task's container init, started by
// libcontainer in its own cgroups) into the tracking cgroup, before it
// runs the task's program: whatever it forks is then tracked too.
func (c *taskCgroup) join(pid int) error {
	if c == nil {
		return nil
	}
	if err := os.WriteFile(filepath.Join(c.Path, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("join task cgroup %s: %w", c.Path, err)
	}
	return nil
}
