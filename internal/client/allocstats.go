package client

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

// allocStatsTimeout bounds one stats request (docker samples for about a
// second per container; tasks are sampled in parallel).
const allocStatsTimeout = 15 * time.Second

// AllocStats samples the resource use of an allocation's running tasks
// whose driver can report it (docker); tasks of other drivers are left out
// rather than reported as using nothing.
func (c *Client) AllocStats(allocID string) (*api.AllocResourceUsage, error) {
	ar, err := c.getAllocRunner(allocID)
	if err != nil {
		return nil, structs.NewErrCoded(404, "Unknown allocation %q", allocID)
	}
	a := ar.Alloc()
	var tg *structs.TaskGroup
	if a.Job != nil {
		tg = a.Job.LookupTaskGroup(a.TaskGroup)
	}
	ctx, cancel := context.WithTimeout(context.Background(), allocStatsTimeout)
	defer cancel()
	out := &api.AllocResourceUsage{Tasks: map[string]*api.TaskResourceUsage{}, ResourceUsage: &api.ResourceUsage{
		MemoryStats: &api.MemoryStats{}, CpuStats: &api.CpuStats{}}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	if tg != nil {
		ds := c.driverSet()
		for _, t := range tg.Tasks {
			sd, ok := ds[t.Driver].(drivers.StatsDriver)
			st := ar.TaskState(t.Name)
			if !ok || st == nil || st.State != structs.TaskStateRunning {
				continue
			}
			wg.Add(1)
			go func(name string) {
				defer wg.Done()
				u, err := sd.TaskStats(ctx, allocID+"/"+name)
				if err != nil {
					c.logger.Debug("task stats failed", "alloc_id", allocID, "task", name, "error", err)
					return
				}
				tu := toAPIUsage(u)
				mu.Lock()
				out.Tasks[name] = tu
				addUsage(out.ResourceUsage, tu.ResourceUsage)
				out.Timestamp = max(out.Timestamp, tu.Timestamp)
				mu.Unlock()
			}(t.Name)
		}
	}
	wg.Wait()
	if out.Timestamp == 0 {
		out.Timestamp = c.now().UnixNano()
	}
	return out, nil
}

func toAPIUsage(u *drivers.TaskResourceUsage) *api.TaskResourceUsage {
	m, cpu := u.Memory, u.CPU
	return &api.TaskResourceUsage{
		Timestamp: u.Timestamp.UnixNano(),
		ResourceUsage: &api.ResourceUsage{
			MemoryStats: &api.MemoryStats{RSS: m.RSS, Cache: m.Cache, Swap: m.Swap, Usage: m.Usage, MaxUsage: m.MaxUsage,
				Measured: append([]string(nil), m.Measured...)},
			CpuStats: &api.CpuStats{SystemMode: cpu.SystemMode, UserMode: cpu.UserMode, TotalTicks: cpu.TotalTicks,
				ThrottledPeriods: cpu.ThrottledPeriods, ThrottledTime: cpu.ThrottledTime, Percent: cpu.Percent,
				Measured: append([]string(nil), cpu.Measured...)},
		},
	}
}

// addUsage sums a task's usage into the allocation's.
func addUsage(sum, u *api.ResourceUsage) {
	sm, m := sum.MemoryStats, u.MemoryStats
	sm.RSS += m.RSS
	sm.Cache += m.Cache
	sm.Swap += m.Swap
	sm.Usage += m.Usage
	sm.MaxUsage += m.MaxUsage
	sm.Measured = m.Measured
	sc, c := sum.CpuStats, u.CpuStats
	sc.SystemMode += c.SystemMode
	sc.UserMode += c.UserMode
	sc.TotalTicks += c.TotalTicks
	sc.ThrottledPeriods += c.ThrottledPeriods
	sc.ThrottledTime += c.ThrottledTime
	sc.Percent += c.Percent
	sc.Measured = c.Measured
}
