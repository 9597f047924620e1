package rawexec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/drivers"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times (100 on
// every Linux architecture Go supports).
const clockTicks = 100

// cpuSample is a task's CPU time at one instant.
type cpuSample struct {
	at           time.Time
	user, system uint64 // ticks
}

// TaskStats implements drivers.StatsDriver from /proc of the task's
// processes (every process in its cgroup, or its process group): memory
// is the sum of their resident sets; CPU use is the ticks they spent since
// the previous sample (the first sample measures over a short window).
// raw_exec sets no limits, so it reads no controller files: the cgroup
// here tracks processes, and v1 memory/cpu controllers may not be ours.
func (d *Driver) TaskStats(ctx context.Context, taskID string) (*drivers.TaskResourceUsage, error) {
	h, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	pids := h.pids()
	now := sampleCPU(pids)
	h.statsMu.Lock()
	prev := h.lastCPU
	h.lastCPU = now
	h.statsMu.Unlock()
	if prev.at.IsZero() || now.at.Sub(prev.at) > time.Minute {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		prev, now = now, sampleCPU(h.pids())
		h.statsMu.Lock()
		h.lastCPU = now
		h.statsMu.Unlock()
	}
	u := &drivers.TaskResourceUsage{Timestamp: now.at}
	u.Memory.RSS = sumRSS(pids)
	u.Memory.Usage = u.Memory.RSS
	u.Memory.Measured = []string{"RSS"}
	if secs := now.at.Sub(prev.at).Seconds(); secs > 0 {
		pct := func(a, b uint64) float64 {
			if a < b {
				return 0 // a process left: its time left with it
			}
			return float64(a-b) / clockTicks / secs * 100
		}
		u.CPU.UserMode = pct(now.user, prev.user)
		u.CPU.SystemMode = pct(now.system, prev.system)
		u.CPU.Percent = u.CPU.UserMode + u.CPU.SystemMode
		if mhz := h.cfg.CPUTotalCompute; mhz > 0 {
			u.CPU.TotalTicks = u.CPU.Percent / 100 * float64(mhz) / float64(runtime.NumCPU())
		}
	}
	u.CPU.Measured = []string{"Percent", "System Mode", "User Mode", "Total Ticks"}
	return u, nil
}

func sampleCPU(pids []int) cpuSample {
	s := cpuSample{at: time.Now()}
	for _, p := range pids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "stat"))
		if err != nil {
			continue
		}
		str := string(b)
		i := strings.LastIndexByte(str, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(str[i+1:])
		if len(f) < 13 {
			continue
		}
		// f[11], f[12] are fields 14 (utime) and 15 (stime).
		ut, _ := strconv.ParseUint(f[11], 10, 64)
		st, _ := strconv.ParseUint(f[12], 10, 64)
		s.user += ut
		s.system += st
	}
	return s
}

func sumRSS(pids []int) uint64 {
	page := uint64(os.Getpagesize())
	var total uint64
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", p))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseUint(f[1], 10, 64)
		total += n * page
	}
	return total
}
