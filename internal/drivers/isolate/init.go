package isolate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func init() {
	if len(os.Args) > 2 && os.Args[1] == InitCommand {
		// Capabilities and the exec must happen on one thread: the
		// bounding set is per thread and the exec'd program inherits the
		// calling thread's.
		runtime.LockOSThread()
		// fd 3 tells the supervisor why the task could not start; exec
		// closes it.
		syscall.CloseOnExec(initErrFD)
		if err := initMain(os.Args[2]); err != nil {
			msg := fmt.Sprintf("cannot start the isolated task: %v\n", err)
			if _, werr := syscall.Write(initErrFD, []byte(msg)); werr != nil {
				fmt.Fprint(os.Stderr, "drover: "+msg)
			}
			os.Exit(127)
		}
	}
	if len(os.Args) > 2 && os.Args[1] == EnterCommand {
		if err := enterMain(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "drover: cannot enter the task: %v\n", err)
			os.Exit(126)
		}
	}
}

// initErrFD is the pipe on which the init reports a failure to start.
const initErrFD = 3

// ReadSpec reads a spec (JSON).
func ReadSpec(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// initMain runs in the task's new namespaces and never returns on success
// (it execs the task).
func initMain(specPath string) error {
	s, err := ReadSpec(specPath)
	if err != nil {
		return fmt.Errorf("read spec: %w", err)
	}
	// Nothing mounted below may reach the host's mount table.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	// The cgroups are opened now (they are out of sight once the root
	// changes) and joined just before the exec: the limits then cover the
	// task from its first instruction, while this Go program's own threads
	// never count against a small pids limit (moving a process in is not
	// limited, forking in is).
	var joins []*os.File
	defer func() {
		for _, f := range joins {
			f.Close()
		}
	}()
	for _, cg := range s.Cgroups {
		f, err := os.OpenFile(filepath.Join(cg, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("open cgroup %s: %w", cg, err)
		}
		joins = append(joins, f)
	}
	// The user is looked up in the host's files before the root changes
	// (the default chroot_env binds the same /etc).
	cred, err := lookupUser(s.User)
	if err != nil {
		return err
	}
	if err := buildRoot(s); err != nil {
		return err
	}
	if err := enterRoot(s.Root, s.NoPivotRoot); err != nil {
		return err
	}
	if s.Hostname != "" {
		_ = unix.Sethostname([]byte(s.Hostname))
	}
	wd := s.WorkDir
	if wd == "" {
		wd = "/"
	}
	if err := os.Chdir(wd); err != nil {
		return fmt.Errorf("work_dir %s: %w", wd, err)
	}
	path, err := lookPath(s.Path, s.Env)
	if err != nil {
		return err
	}
	for _, f := range joins {
		if _, err := f.Write([]byte("0")); err != nil {
			return fmt.Errorf("join cgroup %s: %w", filepath.Dir(f.Name()), err)
		}
	}
	if err := dropBounding(s.Caps); err != nil {
		return err
	}
	if err := cred.apply(); err != nil {
		return err
	}
	return syscall.Exec(path, s.Args, s.Env)
}

func buildRoot(s *Spec) error {
	root := s.Root
	// pivot_root needs the new root to be a mount point.
	if err := unix.Mount(root, root, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind the task dir: %w", err)
	}
	hosts := make([]string, 0, len(s.Chroot))
	for h := range s.Chroot {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts) // parents before children
	for _, h := range hosts {
		if err := bindInto(root, h, s.Chroot[h], true); err != nil {
			return err
		}
	}
	if s.SharedAlloc != "" {
		if err := bindInto(root, s.SharedAlloc, "/alloc", false); err != nil {
			return err
		}
	}
	// The driver's private files (the supervisor's spec, state and logs)
	// are not the task's business.
	if err := mountAt(root, "/private", "tmpfs", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=700,size=64k"); err != nil {
		return err
	}
	if s.HostPID {
		if err := bindInto(root, "/proc", "/proc", false); err != nil {
			return err
		}
	} else {
		if err := mountAt(root, "/proc", "proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return err
		}
		if err := maskProc(root); err != nil {
			return err
		}
	}
	if err := mountAt(root, "/sys", "sysfs", "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC|unix.MS_RDONLY, ""); err != nil {
		// A sysfs mount can be refused (it is tied to the network
		// namespace); a read-only bind of the host's is the fallback.
		if err := bindInto(root, "/sys", "/sys", true); err != nil {
			return err
		}
	}
	if fw := filepath.Join(root, "sys", "firmware"); dirExists(fw) {
		if err := unix.Mount("tmpfs", fw, "tmpfs", unix.MS_RDONLY, "size=0"); err != nil {
			return fmt.Errorf("mask /sys/firmware: %w", err)
		}
	}
	return buildDev(root)
}

// maskProc hides what a container runtime hides from a task in its /proc
// (kernel memory, keys, timers) and makes the kernel's knobs read-only, as
// Nomad's executor does through libcontainer.
func maskProc(root string) error {
	for _, p := range []string{"kcore", "keys", "timer_list", "sched_debug", "latency_stats", "acpi", "scsi"} {
		target := filepath.Join(root, "proc", p)
		fi, err := os.Stat(target)
		if err != nil {
			continue // not on this kernel
		}
		if fi.IsDir() {
			err = unix.Mount("tmpfs", target, "tmpfs", unix.MS_RDONLY, "size=0")
		} else {
			err = unix.Mount("/dev/null", target, "", unix.MS_BIND, "")
		}
		if err != nil {
			return fmt.Errorf("mask /proc/%s: %w", p, err)
		}
	}
	for _, p := range []string{"sys", "sysrq-trigger", "irq", "bus", "fs"} {
		target := filepath.Join(root, "proc", p)
		if _, err := os.Stat(target); err != nil {
			continue
		}
		if err := unix.Mount(target, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind /proc/%s: %w", p, err)
		}
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("make /proc/%s read-only: %w", p, err)
		}
	}
	return nil
}

// buildDev mounts a tmpfs /dev with the devices a process expects.
func buildDev(root string) error {
	if err := mountAt(root, "/dev", "tmpfs", "tmpfs", unix.MS_NOSUID|unix.MS_STRICTATIME, "mode=755,size=65536k"); err != nil {
		return err
	}
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		if err := bindInto(root, "/dev/"+d, "/dev/"+d, false); err != nil {
			return err
		}
	}
	if err := mountAt(root, "/dev/pts", "devpts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return err
	}
	if err := mountAt(root, "/dev/shm", "shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=65536k"); err != nil {
		return err
	}
	links := map[string]string{"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"}
	for n, target := range links {
		if err := os.Symlink(target, filepath.Join(root, "dev", n)); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("/dev/%s: %w", n, err)
		}
	}
	return nil
}

func mountAt(root, dst, source, fstype string, flags uintptr, data string) error {
	target := filepath.Join(root, dst)
	if err := noSymlinks(root, dst, false); err != nil {
		return err
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	if err := unix.Mount(source, target, fstype, flags, data); err != nil {
		return fmt.Errorf("mount %s on %s: %w", fstype, dst, err)
	}
	return nil
}

// bindInto bind-mounts host path src at dst inside root. A missing source
// is skipped (not every host has /lib32); a symlink is recreated as a
// symlink so /bin -> usr/bin keeps working.
func bindInto(root, src, dst string, readOnly bool) error {
	fi, err := os.Lstat(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	target := filepath.Join(root, filepath.Clean("/"+dst))
	isLink := fi.Mode()&os.ModeSymlink != 0
	if err := noSymlinks(root, dst, isLink); err != nil {
		return err
	}
	if isLink {
		link, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if cur, err := os.Readlink(target); err == nil && cur == link {
			return nil
		}
		if err := os.Symlink(link, target); err != nil {
			return fmt.Errorf("chroot_env %s: %w", src, err)
		}
		return nil
	}
	if fi.IsDir() {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("chroot_env %s: %w", src, err)
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o644)
		if err != nil {
			return fmt.Errorf("chroot_env %s: %w", src, err)
		}
		f.Close()
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s at %s: %w", src, dst, err)
	}
	if readOnly {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", dst, err)
		}
	}
	return nil
}

// noSymlinks refuses a mount target inside the task's root reached through
// a symlink: the task owns its directory and could otherwise point a path
// the init creates (as root, on the host's filesystem, before the root
// changes) anywhere on the host. lastMayLink allows the final component
// to be a symlink (chroot_env symlinks are recreated as symlinks).
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

// enterRoot makes root the process's "/".
func enterRoot(root string, noPivot bool) error {
	if err := os.Chdir(root); err != nil {
		return err
	}
	if noPivot {
		if err := unix.Mount(root, "/", "", unix.MS_MOVE, ""); err != nil {
			return fmt.Errorf("move the root: %w", err)
		}
		if err := unix.Chroot("."); err != nil {
			return fmt.Errorf("chroot: %w", err)
		}
		return os.Chdir("/")
	}
	// pivot_root(".", ".") stacks the old root on the new one; unmounting
	// it leaves the task's root alone (the trick runc uses).
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w (set no_pivot_root = true in the plugin config on a ramdisk root)", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the old root: %w", err)
	}
	return os.Chdir("/")
}

// dropBounding removes every capability outside keep from the bounding set.
func dropBounding(keep []string) error {
	k := map[int]bool{}
	for _, c := range keep {
		if n, ok := capNumbers[c]; ok {
			k[n] = true
		}
	}
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if k[c] {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	return nil
}

// lookPath finds the command inside the (new) root.
func lookPath(cmd string, env []string) (string, error) {
	if strings.Contains(cmd, "/") {
		if _, err := os.Stat(cmd); err != nil {
			return "", fmt.Errorf("command %s: %w", cmd, err)
		}
		return cmd, nil
	}
	path := "/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin"
	for _, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			path = e[5:]
		}
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, cmd)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	for _, p := range []string{filepath.Join("/local", cmd), filepath.Join("/", cmd)} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q not found in the task's root (PATH %s, /local)", cmd, path)
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
