package qemu

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

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat CPU times (100 on
// every Linux this runs on).
const clockTicks = 100

var pageSize = uint64(os.Getpagesize())

// TaskStats implements drivers.StatsDriver: the CPU and memory of the VM's
// processes (qemu and anything it started). CPU percents are of one core
// over the time since the previous sample (the first sample: since the VM
// started); memory is the resident set.
func (d *Driver) TaskStats(ctx context.Context, taskID string) (*drivers.TaskResourceUsage, error) {
	t, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	st, err := d.inner.InspectTask(taskID)
	if err != nil {
		return nil, err
	}
	if st.State != drivers.TaskStateRunning {
		return nil, fmt.Errorf("task %q has exited", taskID)
	}
	now := time.Now()
	var ticks, userTicks, sysTicks, rss uint64
	for _, pid := range st.PIDs {
		u, s, r, err := procUsage(pid)
		if err != nil {
			continue // exited between the listing and the read
		}
		userTicks += u
		sysTicks += s
		rss += r
	}
	ticks = userTicks + sysTicks

	t.statsMu.Lock()
	prevTicks, prevTime := t.lastCPU, t.lastTime
	if prevTime.IsZero() {
		prevTicks, prevTime = 0, st.StartedAt
	}
	t.lastCPU, t.lastTime = ticks, now
	t.statsMu.Unlock()

	u := &drivers.TaskResourceUsage{Timestamp: now}
	u.Memory = drivers.MemoryUsage{RSS: rss, Usage: rss, Measured: []string{"RSS", "Usage"}}
	if elapsed := now.Sub(prevTime).Seconds(); elapsed > 0 && ticks >= prevTicks {
		pct := func(n uint64) float64 { return float64(n) / clockTicks / elapsed * 100 }
		u.CPU.Percent = pct(ticks - prevTicks)
		if ticks > 0 {
			// The user/system split of the interval, in the lifetime's
			// proportion (the interval's own split is not kept).
			u.CPU.UserMode = u.CPU.Percent * float64(userTicks) / float64(ticks)
			u.CPU.SystemMode = u.CPU.Percent * float64(sysTicks) / float64(ticks)
		}
		if mhz := t.cfg.CPUTotalCompute; mhz > 0 {
			if n := runtime.NumCPU(); n > 0 {
				u.CPU.TotalTicks = u.CPU.Percent / 100 * float64(mhz) / float64(n)
			}
		}
	}
	u.CPU.Measured = []string{"Percent", "User Mode", "System Mode", "Total Ticks"}
	return u, nil
}

// procUsage reads a process's user and system CPU ticks and resident bytes.
func procUsage(pid int) (user, sys, rss uint64, err error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3; utime is field 14, stime 15, rss (pages) 24.
	if len(f) < 22 {
		return 0, 0, 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	user, _ = strconv.ParseUint(f[11], 10, 64)
	sys, _ = strconv.ParseUint(f[12], 10, 64)
	pages, _ := strconv.ParseUint(f[21], 10, 64)
	return user, sys, pages * pageSize, nil
}
