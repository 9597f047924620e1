package client

import (
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"

	"github.com/drover-project/drover/internal/structs"
)

// Allocation gauges, named as Nomad names them:
// nomad.client.allocations.<pending|running|terminal>, labelled with the
// node's ID, datacenter, pool and (when set) class.
var (
	keyAllocsPending  = []string{"client", "allocations", "pending"}
	keyAllocsRunning  = []string{"client", "allocations", "running"}
	keyAllocsTerminal = []string{"client", "allocations", "terminal"}
)

// emitStats publishes the client's gauges at once and then every
// StatsInterval until shutdown.
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
// report: pending, running, and terminal (complete, failed or lost).
func (c *Client) allocCounts() (pending, running, terminal int) {
	for _, a := range c.Allocs() {
		switch a.ClientStatus {
		case structs.AllocClientStatusPending:
			pending++
		case structs.AllocClientStatusRunning:
			running++
		case structs.AllocClientStatusComplete, structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
			terminal++
		}
	}
	return pending, running, terminal
}

// publishStats sets the client's gauges once.
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
	pending, running, terminal := c.allocCounts()
	metrics.SetGaugeWithLabels(keyAllocsPending, float32(pending), labels)
	metrics.SetGaugeWithLabels(keyAllocsRunning, float32(running), labels)
	metrics.SetGaugeWithLabels(keyAllocsTerminal, float32(terminal), labels)
}
