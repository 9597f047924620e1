package isolate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CgroupRoot is where the v1 hierarchies are mounted (a variable for tests).
var CgroupRoot = "/sys/fs/cgroup"

const (
	cgroup1Magic = 0x27e0eb
	cgroup2Magic = 0x63677270
)

// controllers are the v1 hierarchies a task gets a cgroup in.
var controllers = []string{"memory", "cpu", "cpuacct", "cpuset", "pids"}

// CheckCgroups reports whether the host has what the limits are written
// to: every v1 controller mounted, or a pure cgroup v2 host with the
// memory, pids, cpu and cpuset controllers; if not, why.
func CheckCgroups() error {
	if isV2() {
		return v2Check()
	}
	return cgroupsV1()
}

// isV2 reports a pure cgroup v2 host (the unified hierarchy at the root).
func isV2() bool {
	var st syscall.Statfs_t
	return syscall.Statfs(CgroupRoot, &st) == nil && int64(st.Type) == cgroup2Magic
}

func cgroupsV1() error {
	for _, c := range controllers {
		var st syscall.Statfs_t
		p := filepath.Join(CgroupRoot, c)
		if err := syscall.Statfs(p, &st); err != nil {
			return fmt.Errorf("cgroup v1 controller %s is not mounted at %s", c, p)
		}
		if int64(st.Type) != cgroup1Magic {
			return fmt.Errorf("%s is not a cgroup v1 hierarchy, and %s is not a pure cgroup v2 host", p, CgroupRoot)
		}
	}
	return nil
}

// Limits are a task's resource limits.
type Limits struct {
	MemoryMB    int64 // soft limit (the reservation)
	MemoryMaxMB int64 // hard limit when above MemoryMB (oversubscription)
	CPUShares   int64 // cpu.shares (the task's MHz, as Nomad does)
	Cores       []uint16
	PidsMax     int64 // 0: no limit
}

// Cgroups are one task's cgroups: one per v1 controller, or its one v2
// cgroup (the same one raw_exec's supervisor clones the task into). Their
// paths are derived from the task alone, so a restarted agent finds them
// again.
type Cgroups struct {
	Parent string
	Name   string
	V2     bool
}

// NewCgroups names a task's cgroups on this host.
func NewCgroups(parent, name string) *Cgroups {
	return &Cgroups{Parent: parent, Name: name, V2: isV2()}
}

// Dir is the task's cgroup in one controller (v2: its only cgroup).
func (c *Cgroups) Dir(ctrl string) string {
	p := c.Parent
	if p == "" {
		p = "drover"
	}
	if c.V2 {
		return filepath.Join(CgroupRoot, filepath.Clean("/"+p), c.Name)
	}
	return filepath.Join(CgroupRoot, ctrl, filepath.Clean("/"+p), c.Name)
}

// Paths are the task's cgroup dirs, for Spec.Cgroups.
func (c *Cgroups) Paths() []string {
	if c.V2 {
		return []string{c.Dir("")}
	}
	out := make([]string, 0, len(controllers))
	for _, ctrl := range controllers {
		out = append(out, c.Dir(ctrl))
	}
	return out
}

// Create makes the task's cgroups and writes its limits.
func (c *Cgroups) Create(l Limits) error {
	if c.V2 {
		return c.createV2(l)
	}
	for _, ctrl := range controllers {
		if err := os.MkdirAll(c.Dir(ctrl), 0o755); err != nil {
			return fmt.Errorf("create %s cgroup: %w", ctrl, err)
		}
	}
	if err := c.initCpuset(l.Cores); err != nil {
		return err
	}
	write := func(ctrl, file, val string) error {
		if err := os.WriteFile(filepath.Join(c.Dir(ctrl), file), []byte(val), 0); err != nil {
			return fmt.Errorf("set %s %s=%s: %w", ctrl, file, val, err)
		}
		return nil
	}
	if l.MemoryMB > 0 {
		hard := l.MemoryMB
		if l.MemoryMaxMB > hard {
			hard = l.MemoryMaxMB
		}
		if err := write("memory", "memory.limit_in_bytes", strconv.FormatInt(hard<<20, 10)); err != nil {
			return err
		}
		if err := write("memory", "memory.soft_limit_in_bytes", strconv.FormatInt(l.MemoryMB<<20, 10)); err != nil {
			return err
		}
		// With swap, the limit would only push the task out to swap.
		_ = write("memory", "memory.memsw.limit_in_bytes", strconv.FormatInt(hard<<20, 10))
	}
	if l.CPUShares > 0 {
		shares := l.CPUShares
		if shares < 2 {
			shares = 2
		}
		if err := write("cpu", "cpu.shares", strconv.FormatInt(shares, 10)); err != nil {
			return err
		}
	}
	pids := "max"
	if l.PidsMax > 0 {
		pids = strconv.FormatInt(l.PidsMax, 10)
	}
	return write("pids", "pids.max", pids)
}

// initCpuset gives the task (and every level above it up to the root,
// since new cpuset cgroups start empty) cpus and memory nodes: the reserved
// cores when the task has some, else whatever its parent has.
func (c *Cgroups) initCpuset(cores []uint16) error {
	root := filepath.Join(CgroupRoot, "cpuset")
	dir := c.Dir("cpuset")
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return err
	}
	cur := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		parent := cur
		cur = filepath.Join(cur, part)
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			b, _ := os.ReadFile(filepath.Join(cur, f))
			val := strings.TrimSpace(string(b))
			if cur == dir && f == "cpuset.cpus" && len(cores) > 0 {
				var parts []string
				for _, core := range cores {
					parts = append(parts, strconv.Itoa(int(core)))
				}
				val = strings.Join(parts, ",")
			} else if val != "" {
				continue
			} else {
				pb, err := os.ReadFile(filepath.Join(parent, f))
				if err != nil {
					return fmt.Errorf("read %s: %w", f, err)
				}
				val = strings.TrimSpace(string(pb))
			}
			if err := os.WriteFile(filepath.Join(cur, f), []byte(val), 0); err != nil {
				return fmt.Errorf("set %s=%s in %s: %w", f, val, cur, err)
			}
		}
	}
	return nil
}

// Destroy kills whatever is left in the task's cgroups and removes them.
// Safe to call more than once.
func (c *Cgroups) Destroy() error {
	deadline := time.Now().Add(10 * time.Second)
	var errs []error
	ctrls := controllers
	if c.V2 {
		ctrls = []string{""}
	}
	for _, ctrl := range ctrls {
		dir := c.Dir(ctrl)
		for {
			b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			pids := strings.Fields(string(b))
			if len(pids) == 0 {
				if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
					break
				}
			}
			for _, p := range pids {
				if pid, err := strconv.Atoi(p); err == nil && pid != os.Getpid() {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("cgroup %s: still has processes %v", dir, pids))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}

// OOMKilled reports whether the kernel's OOM killer killed a process of
// the task's memory cgroup.
func (c *Cgroups) OOMKilled() bool {
	if c.V2 {
		return c.oomKilledV2()
	}
	b, err := os.ReadFile(filepath.Join(c.Dir("memory"), "memory.oom_control"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" {
			n, _ := strconv.Atoi(f[1])
			return n > 0
		}
	}
	// Older kernels lack the counter; failcnt at the limit is the sign.
	return false
}

// Sample is one reading of the task's cgroup counters.
type Sample struct {
	At                    time.Time
	CPUNanos              uint64
	UserNanos, SysNanos   uint64
	ThrottledPeriods      uint64
	ThrottledNanos        uint64
	RSS, Cache, Swap      uint64
	MemUsage, MemMaxUsage uint64
}

// Read takes a sample.
func (c *Cgroups) Read() (*Sample, error) {
	if c.V2 {
		return c.readV2()
	}
	s := &Sample{At: time.Now()}
	num := func(ctrl, file string) (uint64, error) {
		b, err := os.ReadFile(filepath.Join(c.Dir(ctrl), file))
		if err != nil {
			return 0, err
		}
		return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	kv := func(ctrl, file string) map[string]uint64 {
		out := map[string]uint64{}
		b, _ := os.ReadFile(filepath.Join(c.Dir(ctrl), file))
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 2 {
				n, _ := strconv.ParseUint(f[1], 10, 64)
				out[f[0]] = n
			}
		}
		return out
	}
	var err error
	if s.CPUNanos, err = num("cpuacct", "cpuacct.usage"); err != nil {
		return nil, fmt.Errorf("read cpu usage: %w", err)
	}
	st := kv("cpuacct", "cpuacct.stat") // USER_HZ (100/s) ticks
	s.UserNanos, s.SysNanos = st["user"]*10_000_000, st["system"]*10_000_000
	th := kv("cpu", "cpu.stat")
	s.ThrottledPeriods, s.ThrottledNanos = th["nr_throttled"], th["throttled_time"]
	if s.MemUsage, err = num("memory", "memory.usage_in_bytes"); err != nil {
		return nil, fmt.Errorf("read memory usage: %w", err)
	}
	s.MemMaxUsage, _ = num("memory", "memory.max_usage_in_bytes")
	ms := kv("memory", "memory.stat")
	s.RSS, s.Cache, s.Swap = ms["total_rss"], ms["total_cache"], ms["total_swap"]
	return s, nil
}
