package isolate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// v2Controllers are the controllers a task's v2 cgroup needs.
var v2Controllers = []string{"memory", "pids", "cpu", "cpuset"}

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

// createV2 enables the controllers on every level above the task's cgroup
// and writes its limits: memory.max the hard limit, memory.low the
// reservation, cpu.weight from the shares (as runc converts them),
// cpuset.cpus the reserved cores, pids.max.
func (c *Cgroups) createV2(l Limits) error {
	dir := c.Dir("")
	rel, err := filepath.Rel(CgroupRoot, dir)
	if err != nil {
		return err
	}
	cur := CgroupRoot
	parts := strings.Split(rel, string(filepath.Separator))
	for _, part := range parts[:len(parts)-1] {
		for _, ctrl := range v2Controllers {
			if err := os.WriteFile(filepath.Join(cur, "cgroup.subtree_control"), []byte("+"+ctrl), 0); err != nil {
				return fmt.Errorf("enable the %s controller in %s: %w", ctrl, cur, err)
			}
		}
		cur = filepath.Join(cur, part)
		if err := os.MkdirAll(cur, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", cur, err)
		}
	}
	for _, ctrl := range v2Controllers {
		if err := os.WriteFile(filepath.Join(cur, "cgroup.subtree_control"), []byte("+"+ctrl), 0); err != nil {
			return fmt.Errorf("enable the %s controller in %s: %w", ctrl, cur, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	write := func(file, val string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(val), 0); err != nil {
			return fmt.Errorf("set %s=%s: %w", file, val, err)
		}
		return nil
	}
	if l.MemoryMB > 0 {
		hard := l.MemoryMB
		if l.MemoryMaxMB > hard {
			hard = l.MemoryMaxMB
		}
		if err := write("memory.max", strconv.FormatInt(hard<<20, 10)); err != nil {
			return err
		}
		if err := write("memory.low", strconv.FormatInt(l.MemoryMB<<20, 10)); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(dir, "memory.swap.max")); err == nil {
			if err := write("memory.swap.max", "0"); err != nil {
				return err
			}
		}
	}
	if l.CPUShares > 0 {
		shares := l.CPUShares
		if shares < 2 {
			shares = 2
		}
		if shares > 262144 {
			shares = 262144
		}
		if err := write("cpu.weight", strconv.FormatInt(1+((shares-2)*9999)/262142, 10)); err != nil {
			return err
		}
	}
	if len(l.Cores) > 0 {
		var cs []string
		for _, core := range l.Cores {
			cs = append(cs, strconv.Itoa(int(core)))
		}
		if err := write("cpuset.cpus", strings.Join(cs, ",")); err != nil {
			return err
		}
	}
	pids := "max"
	if l.PidsMax > 0 {
		pids = strconv.FormatInt(l.PidsMax, 10)
	}
	return write("pids.max", pids)
}

func keyValues(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			n, _ := strconv.ParseUint(f[1], 10, 64)
			out[f[0]] = n
		}
	}
	return out, nil
}

func (c *Cgroups) oomKilledV2() bool {
	ev, err := keyValues(filepath.Join(c.Dir(""), "memory.events"))
	return err == nil && ev["oom_kill"] > 0
}

func (c *Cgroups) readV2() (*Sample, error) {
	dir := c.Dir("")
	s := &Sample{At: time.Now()}
	cpu, err := keyValues(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return nil, fmt.Errorf("read cpu usage: %w", err)
	}
	s.CPUNanos, s.UserNanos, s.SysNanos = cpu["usage_usec"]*1000, cpu["user_usec"]*1000, cpu["system_usec"]*1000
	s.ThrottledPeriods, s.ThrottledNanos = cpu["nr_throttled"], cpu["throttled_usec"]*1000
	num := func(file string) (uint64, error) {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return 0, err
		}
		return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	if s.MemUsage, err = num("memory.current"); err != nil {
		return nil, fmt.Errorf("read memory usage: %w", err)
	}
	if s.MemMaxUsage, err = num("memory.peak"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read memory peak: %w", err)
	}
	s.Swap, _ = num("memory.swap.current")
	if ms, err := keyValues(filepath.Join(dir, "memory.stat")); err == nil {
		s.RSS, s.Cache = ms["anon"], ms["file"]
	}
	return s, nil
}
