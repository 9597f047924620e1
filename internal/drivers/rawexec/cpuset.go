package rawexec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cpusetMount is where the cgroup v1 cpuset hierarchy is mounted; a
// variable for tests.
var cpusetMount = "/sys/fs/cgroup/cpuset"

// cpusetCgroup is the cgroup whose cpuset.cpus confines a task's processes
// to its CPUs: its reserved cores, or the node's shared cpuset (which the
// client changes while the task runs: UpdateCpuset). On a host with the
// cgroup v1 cpuset hierarchy it is <mount>/<parent>/<task>, which the
// task's first process is forked into (see taskCgroup.start); on a pure
// cgroup v2 host with the cpuset controller it is the task's own cgroup.
type cpusetCgroup struct {
	Path string `json:"path"`
	// V1 marks a directory of the v1 cpuset hierarchy (joined by the
	// forking thread, removed with the task); false: the task's v2 cgroup.
	V1 bool `json:"v1"`
}

// newCpuset creates the task's cpuset cgroup holding cpus ("": the parent's
// CPUs), beside the tracking cgroup cg. nil (no error) when the host has
// no cpuset controller this driver can use.
func newCpuset(cg *taskCgroup, parent, name, cpus string) (*cpusetCgroup, error) {
	if cg == nil {
		return nil, nil
	}
	if cg.Kind == cgV2 && v2HasCpuset(cg.Root) {
		if err := enableV2Cpuset(cg.Root, filepath.Dir(cg.Path)); err != nil {
			return nil, err
		}
		c := &cpusetCgroup{Path: cg.Path}
		if cpus != "" {
			if err := c.set(cpus); err != nil {
				return nil, err
			}
		}
		return c, nil
	}
	if fsMagic(cpusetMount) != cgroup1Magic {
		return nil, nil
	}
	if parent == "" {
		parent = defaultParent
	}
	dir := cpusetMount
	for _, part := range append(strings.Split(filepath.Clean("/"+parent), "/")[1:], name) {
		up := dir
		dir = filepath.Join(dir, part)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("create task cpuset cgroup: %w", err)
		}
		// A new cpuset cgroup starts with no CPUs and no memory nodes:
		// nothing may join it until both are set, at every level.
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if cur, _ := os.ReadFile(filepath.Join(dir, f)); strings.TrimSpace(string(cur)) != "" {
				continue
			}
			v, err := os.ReadFile(filepath.Join(up, f))
			if err != nil {
				return nil, fmt.Errorf("task cpuset cgroup: %w", err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), v, 0); err != nil {
				return nil, fmt.Errorf("task cpuset cgroup %s: %w", f, err)
			}
		}
	}
	c := &cpusetCgroup{Path: dir, V1: true}
	if cpus != "" {
		if err := c.set(cpus); err != nil {
			_ = os.Remove(dir)
			return nil, err
		}
	}
	return c, nil
}

// v2HasCpuset reports a cgroup v2 root (a pure v2 host) that offers the
// cpuset controller.
func v2HasCpuset(root string) bool {
	b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		return false
	}
	for _, c := range strings.Fields(string(b)) {
		if c == "cpuset" {
			return true
		}
	}
	return false
}

// enableV2Cpuset turns the cpuset controller on for the children of every
// cgroup from root down to dir (the task cgroup's parent).
func enableV2Cpuset(root, dir string) error {
	rel, err := filepath.Rel(root, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("task cgroup %s is outside %s", dir, root)
	}
	cur := root
	parts := []string{}
	if rel != "." {
		parts = strings.Split(rel, "/")
	}
	for i := 0; ; i++ {
		ctl := filepath.Join(cur, "cgroup.subtree_control")
		if b, _ := os.ReadFile(ctl); !strings.Contains(" "+string(b)+" ", " cpuset ") {
			if err := os.WriteFile(ctl, []byte("+cpuset"), 0); err != nil {
				return fmt.Errorf("enable the cpuset controller in %s: %w", cur, err)
			}
		}
		if i == len(parts) {
			return nil
		}
		cur = filepath.Join(cur, parts[i])
	}
}

// set confines the task to cpus.
func (c *cpusetCgroup) set(cpus string) error {
	if err := os.WriteFile(filepath.Join(c.Path, "cpuset.cpus"), []byte(cpus), 0); err != nil {
		return fmt.Errorf("set the task's cpuset.cpus to %q: %w", cpus, err)
	}
	return nil
}

// cpus reads the task's CPUs.
func (c *cpusetCgroup) cpus() (string, error) {
	b, err := os.ReadFile(filepath.Join(c.Path, "cpuset.cpus"))
	return strings.TrimSpace(string(b)), err
}

// remove deletes a v1 cpuset cgroup, and the cgroups the task made below
// it, once the task's processes are gone (the v2 one is the tracking
// cgroup, removed with it).
func (c *cpusetCgroup) remove() error {
	if c == nil || !c.V1 {
		return nil
	}
	if err := removeTree(c.Path, time.Now().Add(cleanupTimeout)); err != nil {
		return fmt.Errorf("remove task cpuset cgroup: %w", err)
	}
	return nil
}

// adoptCpuset gives a task recovered from an agent that ran it without a
// cpuset cgroup (started before there was one) its cpuset cgroup, and
// moves its processes into it, so it follows the shared set like every
// other task.
func (d *Driver) adoptCpuset(h *taskHandle) {
	if h.cg == nil || h.cg.Cpuset != nil || h.exited() {
		return
	}
	var spec shimSpec
	if err := readJSON(filepath.Join(h.shimDir, shimSpecFile), &spec); err != nil || spec.Isolation != nil {
		return // an isolated task's container has its own cpuset cgroup
	}
	cs, err := newCpuset(h.cg, h.cfg.CgroupParent, cgroupName(h.cfg.ID), h.cfg.Cpus())
	if err != nil || cs == nil {
		if err != nil {
			d.logger.Warn("recovered task stays without a cpuset cgroup", "task", h.cfg.ID, "error", err)
		}
		return
	}
	if cs.V1 {
		// Processes forked while we move them are born where their parent
		// was: move until every process of the task is in.
		for attempt := 0; attempt < 10; attempt++ {
			pids, err := h.cg.pids()
			if err != nil {
				break
			}
			moved := 0
			for _, pid := range pids {
				if in, _ := inCgroup(cs.Path, pid); in {
					continue
				}
				if err := os.WriteFile(filepath.Join(cs.Path, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err == nil {
					moved++
				}
			}
			if moved == 0 {
				break
			}
		}
	}
	h.cg.Cpuset = cs
}

// inCgroup reports whether pid is in the v1 cgroup at dir.
func inCgroup(dir string, pid int) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return false, err
	}
	for _, f := range strings.Fields(string(b)) {
		if f == strconv.Itoa(pid) {
			return true, nil
		}
	}
	return false, nil
}
