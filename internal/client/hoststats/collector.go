package hoststats

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Collector samples the host. CPU percentages are computed between two
// samples, so the first sample reports 0 % for every core. Safe for
// concurrent use.
type Collector struct {
	// ProcRoot is where procfs is mounted ("/proc" when empty); tests point
	// it at a fake tree.
	ProcRoot string
	// AllocDir is the client's allocation directory; its filesystem is
	// reported as AllocDirStats.
	AllocDir string
	// TotalCompute is the node's CPU in MHz, to express busy time as
	// CPUTicksConsumed (0 leaves it 0).
	TotalCompute float64
	// Statfs reads a filesystem's sizes; nil uses statfs(2).
	Statfs func(path string) (Usage, error)

	mu     sync.Mutex
	prev   map[string]cpuTimes
	last   *api.HostStats
	lastAt time.Time
}

// Usage is what statfs reports for one filesystem, in bytes and inodes.
type Usage struct {
	Size, Free, Available uint64
	Inodes, InodesFree    uint64
}

// Collect takes a sample and keeps it as the latest.
func (c *Collector) Collect() (*api.HostStats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	mem, err := c.memory()
	if err != nil {
		return nil, err
	}
	cpus, busy, err := c.cpu()
	if err != nil {
		return nil, err
	}
	s := &api.HostStats{Memory: mem, CPU: cpus, CPUTicksConsumed: busy * c.TotalCompute}
	s.Uptime, err = c.uptime()
	if err != nil {
		return nil, err
	}
	s.DiskStats = c.disks()
	if c.AllocDir != "" {
		d, err := c.disk(c.AllocDir)
		if err != nil {
			return nil, fmt.Errorf("hoststats: alloc dir %s: %w", c.AllocDir, err)
		}
		s.AllocDirStats = d
	}
	c.last, c.lastAt = s, time.Now()
	return s, nil
}

// Latest returns the newest sample if it is at most maxAge old, and takes a
// new one otherwise.
func (c *Collector) Latest(maxAge time.Duration) (*api.HostStats, error) {
	c.mu.Lock()
	last, at := c.last, c.lastAt
	c.mu.Unlock()
	if last != nil && time.Since(at) <= maxAge {
		return last, nil
	}
	return c.Collect()
}

func (c *Collector) proc(name string) string {
	root := c.ProcRoot
	if root == "" {
		root = "/proc"
	}
	return filepath.Join(root, name)
}

// memory reads /proc/meminfo. Used is what is not available (the kernel's
// estimate of what can be given to programs without swapping).
func (c *Collector) memory() (*api.HostMemoryStats, error) {
	b, err := os.ReadFile(c.proc("meminfo"))
	if err != nil {
		return nil, fmt.Errorf("hoststats: %w", err)
	}
	kb := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseUint(f[0], 10, 64); err == nil {
			kb[name] = v
		}
	}
	total, ok := kb["MemTotal"]
	if !ok {
		return nil, fmt.Errorf("hoststats: no MemTotal in %s", c.proc("meminfo"))
	}
	avail, ok := kb["MemAvailable"]
	if !ok { // kernels before 3.14
		avail = kb["MemFree"] + kb["Buffers"] + kb["Cached"]
	}
	if avail > total {
		avail = total
	}
	return &api.HostMemoryStats{Total: total << 10, Available: avail << 10, Used: (total - avail) << 10,
		Free: kb["MemFree"] << 10}, nil
}

// cpuTimes are one core's cumulative jiffies from /proc/stat.
type cpuTimes struct{ user, system, idle, total uint64 }

// cpu reads /proc/stat and returns each core's user/system/idle share of
// the time since the previous sample, in percent, and the busy fraction of
// the whole machine over that time.
func (c *Collector) cpu() ([]*api.HostCPUStats, float64, error) {
	b, err := os.ReadFile(c.proc("stat"))
	if err != nil {
		return nil, 0, fmt.Errorf("hoststats: %w", err)
	}
	now := map[string]cpuTimes{}
	var out []*api.HostCPUStats
	var busy float64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		var v [10]uint64
		for i := 1; i < len(f) && i <= len(v); i++ {
			v[i-1], _ = strconv.ParseUint(f[i], 10, 64)
		}
		// user nice system idle iowait irq softirq steal (guest time is
		// already counted in user).
		t := cpuTimes{user: v[0] + v[1], system: v[2] + v[5] + v[6], idle: v[3] + v[4]}
		t.total = t.user + t.system + t.idle + v[7]
		now[f[0]] = t
		p := c.prev[f[0]]
		d := float64(t.total - p.total)
		var user, sys, idle float64
		if c.prev != nil && t.total > p.total {
			user = 100 * float64(t.user-p.user) / d
			sys = 100 * float64(t.system-p.system) / d
			idle = 100 * float64(t.idle-p.idle) / d
		}
		if f[0] == "cpu" {
			if c.prev != nil && t.total > p.total {
				busy = 1 - idle/100
			}
			continue
		}
		out = append(out, &api.HostCPUStats{CPU: f[0], User: user, System: sys, Idle: idle})
	}
	c.prev = now
	return out, busy, nil
}

func (c *Collector) uptime() (uint64, error) {
	b, err := os.ReadFile(c.proc("uptime"))
	if err != nil {
		return 0, fmt.Errorf("hoststats: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("hoststats: empty %s", c.proc("uptime"))
	}
	secs, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("hoststats: %s: %w", c.proc("uptime"), err)
	}
	return uint64(secs), nil
}

// mount is one line of /proc/self/mounts.
type mount struct{ device, point string }

func (c *Collector) mounts() []mount {
	b, err := os.ReadFile(c.proc("self/mounts"))
	if err != nil {
		return nil
	}
	var out []mount
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		out = append(out, mount{device: f[0], point: unescapeMount(f[1])})
	}
	return out
}

// unescapeMount undoes the octal escapes /proc/self/mounts uses for
// spaces, tabs, newlines and backslashes in mount points.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// disks reports each filesystem of a physical device (/dev/...) once, at its
// first mount point.
func (c *Collector) disks() []*api.HostDiskStats {
	seen := map[string]bool{}
	var out []*api.HostDiskStats
	for _, m := range c.mounts() {
		if !strings.HasPrefix(m.device, "/dev/") || seen[m.device] {
			continue
		}
		seen[m.device] = true
		u, err := c.statfs(m.point)
		if err != nil || u.Size == 0 {
			continue
		}
		out = append(out, diskStats(m, u))
	}
	return out
}

// disk reports the filesystem holding path, named by the longest mount
// point that contains it.
func (c *Collector) disk(path string) (*api.HostDiskStats, error) {
	u, err := c.statfs(path)
	if err != nil {
		return nil, err
	}
	var best mount
	for _, m := range c.mounts() {
		// >=: a later mount on the same point hides the earlier one.
		if within(path, m.point) && len(m.point) >= len(best.point) {
			best = m
		}
	}
	if best.point == "" {
		best.point = path
	}
	return diskStats(best, u), nil
}

func within(path, point string) bool {
	return point == "/" || path == point || strings.HasPrefix(path, strings.TrimSuffix(point, "/")+"/")
}

func (c *Collector) statfs(path string) (Usage, error) {
	if c.Statfs != nil {
		return c.Statfs(path)
	}
	return statfs(path)
}

// diskStats computes what df shows: used is what is not free, and the used
// share is of what an unprivileged user could have (used + available).
func diskStats(m mount, u Usage) *api.HostDiskStats {
	used := u.Size - u.Free
	d := &api.HostDiskStats{Device: m.device, Mountpoint: m.point, Size: u.Size, Used: used, Available: u.Available}
	if used+u.Available > 0 {
		d.UsedPercent = 100 * float64(used) / float64(used+u.Available)
	}
	if u.Inodes > 0 {
		d.InodesUsedPercent = 100 * float64(u.Inodes-u.InodesFree) / float64(u.Inodes)
	}
	return d
}
