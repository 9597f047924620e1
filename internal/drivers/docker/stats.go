package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/drover-project/drover/internal/drivers"
)

var _ drivers.StatsDriver = (*Driver)(nil)

// TaskStats implements drivers.StatsDriver with one sample from the
// engine (which measures CPU over about a second).
func (d *Driver) TaskStats(ctx context.Context, taskID string) (*drivers.TaskResourceUsage, error) {
	h, err := d.get(taskID)
	if err != nil {
		return nil, err
	}
	if h.exited() {
		return nil, fmt.Errorf("task %q has exited", taskID)
	}
	// Docker's one-shot sample carries the previous one (a second
	// earlier); podman's does not, but the first sample of its stream does.
	stream := d.flavor.Podman
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp, err := h.cli.ContainerStats(ctx, h.state.ContainerID, stream)
	if err != nil {
		return nil, fmt.Errorf("stats of container %s: %w", shortID(h.state.ContainerID), err)
	}
	defer resp.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return nil, fmt.Errorf("stats of container %s: %w", shortID(h.state.ContainerID), err)
	}
	return usageFromStats(&s, h.cfg.CPUTotalCompute), nil
}

// usageFromStats converts the engine's sample. CPU percents are of one
// core, from the difference between the sample and the previous one.
func usageFromStats(s *container.StatsResponse, totalMHz int64) *drivers.TaskResourceUsage {
	u := &drivers.TaskResourceUsage{Timestamp: s.Read}
	if u.Timestamp.IsZero() {
		u.Timestamp = time.Now()
	}
	m := s.MemoryStats
	u.Memory = drivers.MemoryUsage{Usage: m.Usage, MaxUsage: m.MaxUsage, Measured: []string{"Usage"}}
	if m.MaxUsage > 0 {
		u.Memory.Measured = append(u.Memory.Measured, "Max Usage")
	}
	if rss, ok := m.Stats["rss"]; ok { // cgroup v1
		u.Memory.RSS, u.Memory.Cache, u.Memory.Swap = rss, m.Stats["cache"], m.Stats["swap"]
		u.Memory.Measured = append(u.Memory.Measured, "RSS", "Cache", "Swap")
	} else if anon, ok := m.Stats["anon"]; ok { // cgroup v2
		u.Memory.RSS, u.Memory.Cache = anon, m.Stats["file"]
		u.Memory.Measured = append(u.Memory.Measured, "RSS", "Cache")
	}

	cpus := float64(s.CPUStats.OnlineCPUs)
	if cpus == 0 {
		cpus = float64(len(s.CPUStats.CPUUsage.PercpuUsage))
	}
	if cpus == 0 {
		cpus = float64(runtime.NumCPU())
	}
	sysDelta := float64(s.CPUStats.SystemUsage) - float64(s.PreCPUStats.SystemUsage)
	pct := func(now, before uint64) float64 {
		if sysDelta <= 0 || now < before {
			return 0
		}
		return float64(now-before) / sysDelta * cpus * 100
	}
	c := s.CPUStats.CPUUsage
	p := s.PreCPUStats.CPUUsage
	u.CPU = drivers.CPUUsage{
		Percent:          pct(c.TotalUsage, p.TotalUsage),
		UserMode:         pct(c.UsageInUsermode, p.UsageInUsermode),
		SystemMode:       pct(c.UsageInKernelmode, p.UsageInKernelmode),
		ThrottledPeriods: s.CPUStats.ThrottlingData.ThrottledPeriods,
		ThrottledTime:    s.CPUStats.ThrottlingData.ThrottledTime,
		Measured:         []string{"Percent", "System Mode", "User Mode", "Throttled Periods", "Throttled Time", "Total Ticks"},
	}
	if totalMHz > 0 {
		u.CPU.TotalTicks = u.CPU.Percent / 100 * float64(totalMHz) / float64(runtime.NumCPU())
	}
	return u
}
