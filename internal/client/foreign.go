package client

import (
	"slices"
	"time"

	"github.com/drover-project/drover/internal/client/fingerprint"
	"github.com/drover-project/drover/internal/structs"
)

// foreignPortsInterval is how often detect_foreign_ports rescans.
var foreignPortsInterval = 30 * time.Second

// watchForeignPorts periodically records ports bound on the node's
// addresses by processes the client did not start in Node.ForeignPorts and
// re-registers the node when the set changes.
func (c *Client) watchForeignPorts() {
	select {
	case <-c.registered:
	case <-c.shutdownCh:
		return
	}
	for {
		c.scanForeignPorts()
		if !c.sleep(foreignPortsInterval) {
			return
		}
	}
}

func (c *Client) scanForeignPorts() {
	node := c.Node()
	ports, err := fingerprint.ForeignPorts("", nodeAddresses(node), c.taskPIDs())
	if err != nil {
		c.logger.Warn("foreign port scan failed", "error", err)
		return
	}
	if slices.Equal(ports, node.ForeignPorts) {
		return
	}
	c.nodeMu.Lock()
	c.node.ForeignPorts = ports
	c.nodeMu.Unlock()
	c.triggerReregister()
}

// taskPIDs lists every process of every task this client runs.
func (c *Client) taskPIDs() []int {
	var pids []int
	for _, a := range c.Allocs() {
		tg := a.Job.LookupTaskGroup(a.TaskGroup)
		if tg == nil {
			continue
		}
		for _, t := range tg.Tasks {
			d := c.driverSet()[t.Driver]
			if d == nil {
				continue
			}
			if st, err := d.InspectTask(a.ID + "/" + t.Name); err == nil {
				pids = append(pids, st.PIDs...)
			}
		}
	}
	return pids
}

// nodeAddresses lists the addresses of the node's networks.
func nodeAddresses(node *structs.Node) []string {
	var addrs []string
	if node.NodeResources != nil {
		for _, nn := range node.NodeResources.NodeNetworks {
			for _, a := range nn.Addresses {
				addrs = append(addrs, a.Address)
			}
		}
	}
	return addrs
}
