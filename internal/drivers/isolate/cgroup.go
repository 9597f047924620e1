package isolate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/manager"
)

// CgroupRoot is where the cgroup hierarchies are mounted.
var CgroupRoot = "/sys/fs/cgroup"

const (
	cgroup1Magic = 0x27e0eb
	cgroup2Magic = 0x63677270
)

// controllers are the v1 hierarchies the limits and stats need.
var controllers = []string{"memory", "cpu", "cpuacct", "cpuset", "pids"}

// v2Controllers are the controllers a pure cgroup v2 host must offer.
var v2Controllers = []string{"memory", "pids", "cpu", "cpuset"}

// CheckCgroups reports whether the host has what the limits are written
// to: every v1 controller mounted, or a pure cgroup v2 host with the
// memory, pids, cpu and cpuset controllers; if not, why.
func CheckCgroups() error {
	if isV2() {
		return v2Check()
	}
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

// isV2 reports a pure cgroup v2 host (the unified hierarchy at the root).
func isV2() bool {
	var st syscall.Statfs_t
	return syscall.Statfs(CgroupRoot, &st) == nil && int64(st.Type) == cgroup2Magic
}

func v2Check() error {
	b, err := os.ReadFile(filepath.Join(CgroupRoot, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("cgroup v2 at %s: %w", CgroupRoot, err)
	}
	have := map[string]bool{}
	for _, c := range strings.Fields(string(b)) {
		have[c] = true
	}
	var missing []string
	for _, c := range v2Controllers {
		if !have[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("cgroup v2 at %s lacks the %s controllers", CgroupRoot, strings.Join(missing, ", "))
	}
	return nil
}

// Limits are a task's resource limits.
type Limits struct {
	MemoryMB    int64    `json:"memory_mb"`     // soft limit (the reservation)
	MemoryMaxMB int64    `json:"memory_max_mb"` // hard limit when above MemoryMB (oversubscription)
	CPUShares   int64    `json:"cpu_shares"`    // cpu.shares (the task's MHz, as Nomad does)
	Cores       []uint16 `json:"cores"`
	PidsMax     int64    `json:"pids_max"` // 0: no limit
}

// CgroupName names a task's cgroups: /<Parent>/<Name> in every hierarchy
// (v2: its one cgroup), derived from the task alone so a restarted agent
// finds them again.
type CgroupName struct {
	Parent string `json:"parent"`
	Name   string `json:"name"`
}

// Path is the cgroup path below the hierarchies' roots.
func (n CgroupName) Path() string {
	p := n.Parent
	if p == "" {
		p = "drover"
	}
	return filepath.Join(filepath.Clean("/"+p), n.Name)
}

// Cgroups are one task's cgroups, read and removed through libcontainer's
// cgroup manager (the one that created them with the container).
type Cgroups struct {
	m cgroups.Manager
}

// NewCgroups opens a task's cgroups (they need not exist).
func NewCgroups(n CgroupName) (*Cgroups, error) {
	m, err := manager.New(&cgroups.Cgroup{Path: n.Path(), Resources: &cgroups.Resources{}})
	if err != nil {
		return nil, fmt.Errorf("cgroup manager: %w", err)
	}
	return &Cgroups{m: m}, nil
}

// Dir is the task's cgroup directory in one v1 controller (v2: its only
// cgroup, whatever ctrl).
func (c *Cgroups) Dir(ctrl string) string {
	if isV2() {
		ctrl = ""
	}
	return c.m.Path(ctrl)
}

// Destroy kills whatever is left in the task's cgroups and removes them.
// Safe to call more than once.
func (c *Cgroups) Destroy() error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids, err := c.m.GetAllPids()
		if err != nil || len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			if pid != os.Getpid() {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("task cgroup %s: still has processes %v", c.Dir("memory"), pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.m.Destroy(); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove task cgroups: %w", err)
	}
	return nil
}

// OOMKilled reports whether the kernel's OOM killer killed a process of
// the task's memory cgroup.
func (c *Cgroups) OOMKilled() bool {
	n, err := c.m.OOMKillCount()
	return err == nil && n > 0
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
	if !c.m.Exists() {
		return nil, errors.New("the task's cgroups do not exist")
	}
	st, err := c.m.GetStats()
	if err != nil {
		return nil, err
	}
	s := &Sample{At: time.Now()}
	cu := st.CpuStats.CpuUsage
	s.CPUNanos, s.UserNanos, s.SysNanos = cu.TotalUsage, cu.UsageInUsermode, cu.UsageInKernelmode
	s.ThrottledPeriods, s.ThrottledNanos = st.CpuStats.ThrottlingData.ThrottledPeriods, st.CpuStats.ThrottlingData.ThrottledTime
	ms := st.MemoryStats
	s.MemUsage, s.MemMaxUsage = ms.Usage.Usage, ms.Usage.MaxUsage
	if isV2() {
		s.RSS, s.Cache, s.Swap = ms.Stats["anon"], ms.Stats["file"], ms.SwapOnlyUsage.Usage
	} else {
		s.RSS, s.Cache, s.Swap = ms.Stats["total_rss"], ms.Stats["total_cache"], ms.Stats["total_swap"]
	}
	return s, nil
}
