package isolate

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// Task is a started container: its init is the task's own program.
type Task struct {
	c   *libcontainer.Container
	p   *libcontainer.Process
	pid int
}

// Pid is the task's main process on the host (PID 1 of its namespace).
func (t *Task) Pid() int { return t.pid }

// Wait waits for the task's main process to exit. The caller must be the
// process that started it (it is that process's subreaper).
func (t *Task) Wait() (*os.ProcessState, error) {
	ps, err := t.p.Wait()
	if ps != nil {
		return ps, nil // an exit status other than 0 is no error here
	}
	return nil, err
}

// Start creates the task's container and starts the task in it, its
// output going to stdout and stderr. joined is called with the task's
// host PID once it sits in its namespaces and cgroups, before it runs
// its own program (a supervisor adds it to its tracking cgroup there).
// The calling process becomes a child subreaper: the container's init is
// re-parented to it, so it can Wait for the task.
//
// The pids limit is written only then, after the container's init (a Go
// program until it execs the task) has its threads: a pids_limit as small
// as the task itself still starts.
func Start(s *Spec, stdout, stderr *os.File, joined func(pid int) error) (*Task, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if err := s.prepareRoot(); err != nil {
		return nil, err
	}
	args := append([]string(nil), s.Args...)
	if len(args) == 0 {
		return nil, errors.New("a command is required")
	}
	path, viaPath, err := s.lookPath()
	if err != nil {
		return nil, err
	}
	if !viaPath {
		args[0] = path // found in /local or / rather than the task's PATH
	}
	cfg, err := s.Config()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.StateRoot, 0o700); err != nil {
		return nil, fmt.Errorf("container state dir: %w", err)
	}
	// A former run of the task (a restart) left its state behind.
	if err := os.RemoveAll(filepath.Join(s.StateRoot, s.ID)); err != nil {
		return nil, err
	}
	c, err := libcontainer.Create(s.StateRoot, s.ID, cfg)
	if err != nil {
		return nil, fmt.Errorf("create container: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		_ = c.Destroy()
		return nil, fmt.Errorf("become subreaper: %w", err)
	}
	wd := s.WorkDir
	if wd == "" {
		wd = "/"
	}
	p := &libcontainer.Process{
		Args: args, Env: s.Env, Cwd: wd,
		UID: s.Cred.Uid, GID: s.Cred.Gid, AdditionalGroups: s.Cred.Groups,
		Stdout: stdout, Stderr: stderr, Init: true,
	}
	fail := func(err error) (*Task, error) {
		_ = p.Signal(unix.SIGKILL)
		_, _ = p.Wait()
		_ = c.Destroy()
		return nil, err
	}
	if err := c.Start(p); err != nil {
		_ = c.Destroy()
		return nil, fmt.Errorf("cannot start the isolated task: %w", err)
	}
	pid, err := p.Pid()
	if err != nil {
		return fail(err)
	}
	if joined != nil {
		if err := joined(pid); err != nil {
			return fail(err)
		}
	}
	if s.Limits.PidsMax > 0 {
		upd := *cfg
		cg := *cfg.Cgroups
		res := *cg.Resources
		n := s.Limits.PidsMax
		res.PidsLimit = &n
		cg.Resources = &res
		upd.Cgroups = &cg
		if err := c.Set(upd); err != nil {
			return fail(fmt.Errorf("set pids limit: %w", err))
		}
	}
	if err := c.Exec(); err != nil {
		return fail(fmt.Errorf("cannot start the isolated task: %w", err))
	}
	t := &Task{c: c, p: p, pid: pid}
	if s.HostPID {
		// In its own PID namespace the task's init reaps its orphans.
		go t.reapOrphans()
	}
	return t, nil
}

// Destroy removes what is left of a task's container: its processes, its
// cgroups and its state.
func Destroy(stateRoot, id string, n CgroupName) error {
	var errs []error
	if cg, err := NewCgroups(n); err != nil {
		errs = append(errs, err)
	} else if err := cg.Destroy(); err != nil {
		errs = append(errs, err)
	}
	if stateRoot != "" && id != "" {
		if err := os.RemoveAll(filepath.Join(stateRoot, id)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// prepareRoot refuses mount targets reached through a symlink in the task
// directory (the task owns it and could otherwise point a path created as
// root anywhere on the host; libcontainer itself would resolve such a
// link inside the root, this says why the start fails) and recreates the
// chroot_env entries that are symlinks on the host (/bin -> usr/bin) as
// symlinks.
func (s *Spec) prepareRoot() error {
	if err := s.checkBinds(); err != nil {
		return err
	}
	dsts := []string{"/private", "/proc", "/dev", "/sys"}
	if s.SharedAlloc != "" {
		dsts = append(dsts, "/alloc")
	}
	for _, b := range s.Binds {
		dsts = append(dsts, b.Destination)
	}
	for _, d := range dsts {
		if err := noSymlinks(s.Root, d, false); err != nil {
			return err
		}
	}
	for host, dst := range s.Chroot {
		fi, err := os.Lstat(host)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		isLink := fi.Mode()&os.ModeSymlink != 0
		if err := noSymlinks(s.Root, dst, isLink); err != nil {
			return err
		}
		if !isLink {
			continue
		}
		link, err := os.Readlink(host)
		if err != nil {
			return err
		}
		target := filepath.Join(s.Root, filepath.Clean("/"+dst))
		if cur, err := os.Readlink(target); err == nil && cur == link {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(link, target); err != nil {
			return fmt.Errorf("chroot_env %s: %w", host, err)
		}
	}
	return nil
}

// noSymlinks fails when a path component of dst inside root is a symlink
// (the last one may be when lastMayLink).
func noSymlinks(root, dst string, lastMayLink bool) error {
	parts := strings.Split(strings.Trim(filepath.Clean("/"+dst), "/"), "/")
	cur := root
	for i, p := range parts {
		cur = filepath.Join(cur, p)
		fi, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink != 0 && !(lastMayLink && i == len(parts)-1) {
			return fmt.Errorf("%s in the task directory is a symlink: refusing to mount %s through it", strings.TrimPrefix(cur, root), dst)
		}
	}
	return nil
}

// hostPath is where a path inside the task's root is on the host: below
// the chroot_env entry that covers it, else in the task directory.
func (s *Spec) hostPath(p string) string {
	p = filepath.Clean("/" + p)
	for i := len(s.Binds) - 1; i >= 0; i-- { // a later bind covers an earlier one
		d := filepath.Clean("/" + s.Binds[i].Destination)
		if p == d || strings.HasPrefix(p, d+"/") {
			return filepath.Join(s.Binds[i].Source, strings.TrimPrefix(p, d))
		}
	}
	best, bestDst := "", ""
	for host, dst := range s.Chroot {
		d := filepath.Clean("/" + dst)
		if (p == d || strings.HasPrefix(p, d+"/") || d == "/") && len(d) > len(bestDst) {
			best, bestDst = host, d
		}
	}
	if bestDst != "" {
		return filepath.Join(best, strings.TrimPrefix(p, bestDst))
	}
	if s.SharedAlloc != "" && (p == "/alloc" || strings.HasPrefix(p, "/alloc/")) {
		return filepath.Join(s.SharedAlloc, strings.TrimPrefix(p, "/alloc"))
	}
	return filepath.Join(s.Root, p)
}

// lookPath finds the command as the task will: a path as is, else in the
// task's PATH inside its root, then in /local and /. viaPath says the
// container's own lookup finds it by name.
func (s *Spec) lookPath() (path string, viaPath bool, err error) {
	cmd := s.Path
	if cmd == "" && len(s.Args) > 0 {
		cmd = s.Args[0]
	}
	exe := func(p string) bool {
		st, err := os.Stat(s.hostPath(p))
		return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
	}
	if strings.Contains(cmd, "/") {
		p := cmd
		if !filepath.IsAbs(p) {
			wd := s.WorkDir
			if wd == "" {
				wd = "/"
			}
			p = filepath.Join(wd, p)
		}
		if _, err := os.Stat(s.hostPath(p)); err != nil {
			return "", false, fmt.Errorf("command %s: %w", cmd, os.ErrNotExist)
		}
		return cmd, true, nil
	}
	search := "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin"
	for _, e := range s.Env {
		if strings.HasPrefix(e, "PATH=") {
			search = e[5:]
		}
	}
	for _, dir := range filepath.SplitList(search) {
		if dir != "" && exe(filepath.Join(dir, cmd)) {
			return filepath.Join(dir, cmd), true, nil
		}
	}
	for _, p := range []string{filepath.Join("/local", cmd), filepath.Join("/", cmd)} {
		if exe(p) {
			return p, false, nil
		}
	}
	return "", false, fmt.Errorf("command %q not found in the task's root (PATH %s, /local)", cmd, search)
}

// reapOrphans waits for the processes a host-PID-namespace task leaves
// behind: being the subreaper, the caller inherits them, and a zombie
// still counts against the task's pids limit. It runs once the container
// has started (libcontainer waits for its own helpers itself) and never
// reaps the task's main process, which Wait does.
func (t *Task) reapOrphans() {
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, unix.SIGCHLD)
	self := os.Getpid()
	for {
		// A sweep first: orphans may have exited before Notify.
		for _, pid := range zombieChildren(self) {
			if pid != t.pid {
				var ws unix.WaitStatus
				_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			}
		}
		<-ch
	}
}

// zombieChildren lists the exited, unreaped children of parent.
func zombieChildren(parent int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", parent))
	for _, tk := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", parent, tk.Name()))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				continue
			}
			// "pid (comm) S ...": the state follows the last ')'.
			if i := strings.LastIndexByte(string(st), ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				out = append(out, pid)
			}
		}
	}
	return out
}
