package client

import (
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// The client's gauges, named as Nomad names them (go-metrics adds the
// "nomad" prefix), labelled with the node's ID, datacenter, pool and (when
// set) class:
//
//	client.allocations.{pending,running,terminal}   always
//	client.host.memory.{total,available,used,free}  with publish_node_metrics,
//	client.host.cpu.{user,system,idle,total}         (label cpu)
//	client.host.disk.{size,used,available,used_percent,inodes_percent} (label disk)
//	client.uptime
//	client.{allocated,unallocated}.{cpu,memory,disk}
//	client.allocs.{memory,cpu}.*   with publish_allocation_metrics (alloc_metrics.go)
var (
	keyAllocsPending  = []string{"client", "allocations", "pending"}
	keyAllocsRunning  = []string{"client", "allocations", "running"}
	keyAllocsTerminal = []string{"client", "allocations", "terminal"}
)

// HostStats returns a sample of the host no older than the stats interval
// (one second when the client publishes none).
func (c *Client) HostStats() (*api.HostStats, error) {
	age := c.cfg.StatsInterval
	if age <= 0 {
		age = time.Second
	}
	return c.host.Latest(age)
}

// emitStats samples the host and publishes the client's gauges at once and
// then every StatsInterval until shutdown.
func (c *Client) emitStats() {
	t := time.NewTicker(c.cfg.StatsInterval)
	defer t.Stop()
	for {
		c.publishStats()
		select {
		case <-c.shutdownCh:
			return
		case <-t.C:
		}
	}
}

// allocCounts counts the client's allocations by the state Nomad's gauges
// report: pending, running, and terminal (complete, failed or lost), and
// sums what the live ones hold.
func (c *Client) allocCounts() (pending, running, terminal int, held structs.ComparableResources) {
	for _, a := range c.Allocs() {
		switch a.ClientStatus {
		case structs.AllocClientStatusPending:
			pending++
		case structs.AllocClientStatusRunning:
			running++
		case structs.AllocClientStatusComplete, structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
			terminal++
			continue
		}
		if a.AllocatedResources != nil && !a.ServerTerminalStatus() {
			held.Add(a.AllocatedResources.Comparable())
		}
	}
	return pending, running, terminal, held
}

// publishStats samples the host and sets the client's gauges once.
func (c *Client) publishStats() {
	node := c.Node()
	labels := []metrics.Label{
		{Name: "node_id", Value: node.ID},
		{Name: "datacenter", Value: node.Datacenter},
		{Name: "node_pool", Value: node.NodePool},
	}
	if node.NodeClass != "" {
		labels = append(labels, metrics.Label{Name: "node_class", Value: node.NodeClass})
	}
	pending, running, terminal, held := c.allocCounts()
	metrics.SetGaugeWithLabels(keyAllocsPending, float32(pending), labels)
	metrics.SetGaugeWithLabels(keyAllocsRunning, float32(running), labels)
	metrics.SetGaugeWithLabels(keyAllocsTerminal, float32(terminal), labels)

	if c.cfg.PublishAllocationMetrics {
		go c.publishAllocMetrics()
	}
	host, err := c.host.Collect()
	if err != nil {
		c.logger.Debug("sampling the host failed", "error", err)
	}
	if !c.cfg.PublishNodeMetrics {
		return
	}
	total := node.Comparable()
	for _, r := range []struct {
		name        string
		held, total int64
	}{{"cpu", held.CPU, total.CPU}, {"memory", held.MemoryMB, total.MemoryMB}, {"disk", held.DiskMB, total.DiskMB}} {
		metrics.SetGaugeWithLabels([]string{"client", "allocated", r.name}, float32(r.held), labels)
		metrics.SetGaugeWithLabels([]string{"client", "unallocated", r.name}, float32(r.total-r.held), labels)
	}
	if host != nil {
		publishHost(host, labels)
	}
}

// publishHost sets the host gauges from one sample.
func publishHost(h *api.HostStats, labels []metrics.Label) {
	with := func(name, value string) []metrics.Label {
		return append(append(make([]metrics.Label, 0, len(labels)+1), labels...), metrics.Label{Name: name, Value: value})
	}
	if m := h.Memory; m != nil {
		metrics.SetGaugeWithLabels([]string{"client", "host", "memory", "total"}, float32(m.Total), labels)
		metrics.SetGaugeWithLabels([]string{"client", "host", "memory", "available"}, float32(m.Available), labels)
		metrics.SetGaugeWithLabels([]string{"client", "host", "memory", "used"}, float32(m.Used), labels)
		metrics.SetGaugeWithLabels([]string{"client", "host", "memory", "free"}, float32(m.Free), labels)
	}
	for _, cpu := range h.CPU {
		l := with("cpu", cpu.CPU)
		metrics.SetGaugeWithLabels([]string{"client", "host", "cpu", "user"}, float32(cpu.User), l)
		metrics.SetGaugeWithLabels([]string{"client", "host", "cpu", "system"}, float32(cpu.System), l)
		metrics.SetGaugeWithLabels([]string{"client", "host", "cpu", "idle"}, float32(cpu.Idle), l)
		metrics.SetGaugeWithLabels([]string{"client", "host", "cpu", "total"}, float32(cpu.User+cpu.System), l)
	}
	for _, d := range h.DiskStats {
		l := with("disk", d.Device)
		metrics.SetGaugeWithLabels([]string{"client", "host", "disk", "size"}, float32(d.Size), l)
		metrics.SetGaugeWithLabels([]string{"client", "host", "disk", "used"}, float32(d.Used), l)
		metrics.SetGaugeWithLabels([]string{"client", "host", "disk", "available"}, float32(d.Available), l)
		metrics.SetGaugeWithLabels([]string{"client", "host", "disk", "used_percent"}, float32(d.UsedPercent), l)
		metrics.SetGaugeWithLabels([]string{"client", "host", "disk", "inodes_percent"}, float32(d.InodesUsedPercent), l)
	}
	metrics.SetGaugeWithLabels([]string{"client", "uptime"}, float32(h.Uptime), labels)
}
