package rawexec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// A task running as root can make cgroups of its own under its cgroup
// (mkdir in its cgroup v1 directories, or its v2 one) and move processes
// into them. Those processes are the task's all the same, and the task's
// cgroup cannot be removed while a child cgroup exists: cleanup works on
// the whole subtree.

// cgroupTree lists dir and every cgroup below it, deepest first (the
// order they can be removed in). A dir that does not exist yields none.
func cgroupTree(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile, or unreadable: skip it
		}
		if e.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	// A child's path is longer than its parent's: longest first puts
	// every cgroup before its parent.
	sort.SliceStable(out, func(i, j int) bool {
		return strings.Count(out[i], "/") > strings.Count(out[j], "/")
	})
	return out
}

// treePids lists the processes in dir's cgroup and every cgroup below it
// (cgroup v1's cgroup.procs lists a cgroup's own processes only).
func treePids(dir string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	self := os.Getpid()
	tree := cgroupTree(dir)
	if len(tree) == 0 {
		return nil, fmt.Errorf("cgroup %s: %w", dir, os.ErrNotExist)
	}
	for _, d := range tree {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && d != dir {
				continue // removed meanwhile
			}
			return nil, err
		}
		for _, f := range strings.Fields(string(b)) {
			var pid int
			if _, err := fmt.Sscan(f, &pid); err != nil || pid == self || seen[pid] {
				// Never report (or kill) ourselves, whatever went wrong.
				continue
			}
			seen[pid] = true
			out = append(out, pid)
		}
	}
	return out, nil
}

// thawBelow thaws every cgroup below dir that froze itself (a frozen
// process cannot die of SIGKILL until it is thawed; thawing dir does not
// thaw a child frozen on its own in cgroup v1).
func thawBelow(dir string, kind cgKind) {
	file, val := "freezer.state", "THAWED"
	if kind == cgV2 {
		file, val = "cgroup.freeze", "0"
	}
	for _, d := range cgroupTree(dir) {
		if d != dir {
			_ = os.WriteFile(filepath.Join(d, file), []byte(val), 0)
		}
	}
}

// removeTree removes dir's cgroup and every cgroup below it, deepest
// first. rmdir can briefly fail with EBUSY while the kernel finishes
// exiting the last tasks: it is retried until the deadline.
func removeTree(dir string, deadline time.Time) error {
	for {
		var last error
		for _, d := range cgroupTree(dir) {
			if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
				last = err
				break // its parent cannot go either
			}
		}
		if last == nil {
			return nil
		}
		if !errors.Is(last, syscall.EBUSY) || time.Now().After(deadline) {
			return last
		}
		time.Sleep(pollInterval)
	}
}
