package client

import (
	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// publishAllocMetrics (telemetry.publish_allocation_metrics) sets, for
// every running task whose driver reports its usage, Nomad's per-task
// gauges labelled alloc_id, job, task_group, task and namespace:
//
//	client.allocs.memory.{rss,cache,swap,usage,max_usage,allocated}
//	client.allocs.cpu.{total_percent,system,user,total_ticks,throttled_time,throttled_periods,allocated}
//
// It runs beside the host sampling, one pass at a time: a slow driver
// (docker samples for about a second) must not delay the host gauges.
func (c *Client) publishAllocMetrics() {
	if !c.allocMetricsBusy.CompareAndSwap(false, true) {
		return
	}
	defer c.allocMetricsBusy.Store(false)
	for _, a := range c.Allocs() {
		if a.ClientStatus != structs.AllocClientStatusRunning {
			continue
		}
		u, err := c.AllocStats(a.ID)
		if err != nil {
			continue
		}
		for task, tu := range u.Tasks {
			if tu == nil || tu.ResourceUsage == nil {
				continue
			}
			publishTaskUsage(a, task, tu.ResourceUsage)
		}
	}
}

func publishTaskUsage(a *structs.Allocation, task string, u *api.ResourceUsage) {
	labels := []metrics.Label{
		{Name: "job", Value: a.JobID},
		{Name: "task_group", Value: a.TaskGroup},
		{Name: "alloc_id", Value: a.ID},
		{Name: "task", Value: task},
		{Name: "namespace", Value: a.Namespace},
	}
	var cpuAsked, memAsked float32
	if ar := a.AllocatedResources; ar != nil {
		if tr := ar.Tasks[task]; tr != nil {
			cpuAsked, memAsked = float32(tr.Cpu.CpuShares), float32(tr.Memory.MemoryMB)
		}
	}
	if m := u.MemoryStats; m != nil {
		for name, v := range map[string]float32{"rss": float32(m.RSS), "cache": float32(m.Cache), "swap": float32(m.Swap),
			"usage": float32(m.Usage), "max_usage": float32(m.MaxUsage), "allocated": memAsked * 1024 * 1024} {
			metrics.SetGaugeWithLabels([]string{"client", "allocs", "memory", name}, v, labels)
		}
	}
	if cpu := u.CpuStats; cpu != nil {
		for name, v := range map[string]float32{"total_percent": float32(cpu.Percent), "system": float32(cpu.SystemMode),
			"user": float32(cpu.UserMode), "total_ticks": float32(cpu.TotalTicks), "throttled_time": float32(cpu.ThrottledTime),
			"throttled_periods": float32(cpu.ThrottledPeriods), "allocated": cpuAsked} {
			metrics.SetGaugeWithLabels([]string{"client", "allocs", "cpu", name}, v, labels)
		}
	}
}
