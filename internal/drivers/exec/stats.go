package exec

import (
	"context"
	"fmt"
	"runtime"

	"github.com/drover-project/drover/internal/drivers"
)

// TaskStats implements drivers.StatsDriver from the task's cgroups. CPU
// percents are of one core, over the time since the previous sample (the
// first sample reports 0).
func (d *Driver) TaskStats(ctx context.Context, taskID string) (*drivers.TaskResourceUsage, error) {
	t, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	s, err := t.cg.Read()
	if err != nil {
		return nil, fmt.Errorf("stats of task %q: %w", taskID, err)
	}
	t.statsMu.Lock()
	prev := t.last
	t.last = s
	t.statsMu.Unlock()
	u := &drivers.TaskResourceUsage{Timestamp: s.At}
	u.Memory = drivers.MemoryUsage{RSS: s.RSS, Cache: s.Cache, Swap: s.Swap, Usage: s.MemUsage, MaxUsage: s.MemMaxUsage,
		Measured: []string{"RSS", "Cache", "Swap", "Usage", "Max Usage"}}
	u.CPU = drivers.CPUUsage{ThrottledPeriods: s.ThrottledPeriods, ThrottledTime: s.ThrottledNanos,
		Measured: []string{"Percent", "System Mode", "User Mode", "Throttled Periods", "Throttled Time", "Total Ticks"}}
	if prev != nil {
		wall := float64(s.At.Sub(prev.At).Nanoseconds())
		if wall > 0 && s.CPUNanos >= prev.CPUNanos {
			u.CPU.Percent = float64(s.CPUNanos-prev.CPUNanos) / wall * 100
		}
		// The user/system split is coarser (v1 counts 10 ms ticks): it
		// divides the precise total.
		if both := float64(s.UserNanos+s.SysNanos) - float64(prev.UserNanos+prev.SysNanos); both > 0 {
			user := float64(s.UserNanos) - float64(prev.UserNanos)
			u.CPU.UserMode = u.CPU.Percent * user / both
			u.CPU.SystemMode = u.CPU.Percent - u.CPU.UserMode
		}
	}
	if total := t.cfg.CPUTotalCompute; total > 0 {
		u.CPU.TotalTicks = u.CPU.Percent / 100 * float64(total) / float64(runtime.NumCPU())
	}
	return u, nil
}
