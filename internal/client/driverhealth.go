package client

import (
	"maps"
	"time"

	"github.com/drover-project/drover/internal/client/fingerprint"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

// defaultDriverHealthInterval is how often drivers are fingerprinted again
// (Nomad checks docker's health every 30 s).
const defaultDriverHealthInterval = 15 * time.Second

// watchDriverHealth fingerprints the drivers periodically. A driver that
// appears (dockerd started after the agent), turns unhealthy (dockerd
// stopped: the node says why, and the scheduler places no new work for it
// here) or recovers updates the node at the servers.
func (c *Client) watchDriverHealth() {
	interval := c.cfg.DriverHealthInterval
	if interval <= 0 {
		interval = defaultDriverHealthInterval
	}
	for c.sleep(interval) {
		c.refingerprintDrivers()
	}
}

// refingerprintDrivers updates the node's driver entries and attributes
// and registers the node again when any driver's detection, health,
// description or attributes changed.
func (c *Client) refingerprintDrivers() {
	node := c.Node()
	before := maps.Clone(node.Drivers)
	fingerprint.Drivers(node, offeredDrivers(c.cfg.Drivers, c.cfg.Options), c.now())
	changed := false
	for name, info := range node.Drivers {
		if !sameDriverInfo(before[name], info) {
			changed = true
			c.logger.Info("driver fingerprint changed", "driver", name, "detected", info.Detected,
				"healthy", info.Healthy, "description", info.HealthDescription)
		}
	}
	if !changed {
		return
	}
	c.nodeMu.Lock()
	c.node.Drivers = node.Drivers
	c.node.Attributes = node.Attributes
	c.node.ComputeClass()
	c.nodeMu.Unlock()
	c.addDetectedDrivers(node.Drivers)
	c.triggerReregister()
}

func sameDriverInfo(a, b *structs.DriverInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Detected == b.Detected && a.Healthy == b.Healthy &&
		a.HealthDescription == b.HealthDescription && maps.Equal(a.Attributes, b.Attributes)
}

// addDetectedDrivers makes drivers detected after start usable by new
// allocations. The map is replaced, never changed in place: alloc runners
// hold the one they were given.
func (c *Client) addDetectedDrivers(infos map[string]*structs.DriverInfo) {
	c.driversMu.Lock()
	defer c.driversMu.Unlock()
	next := maps.Clone(c.drivers)
	added := false
	for _, d := range c.cfg.Drivers {
		if info := infos[d.Name()]; info != nil && info.Detected && next[d.Name()] == nil {
			next[d.Name()] = d
			added = true
		}
	}
	if added {
		c.drivers = next
	}
}

// driverSet is the drivers this client runs tasks with.
func (c *Client) driverSet() map[string]drivers.Driver {
	c.driversMu.RLock()
	defer c.driversMu.RUnlock()
	return c.drivers
}

// restoreDriverSet is the drivers restored allocations run with: the
// detected ones and every configured driver not detected now (its engine
// down as the agent starts, say). A restored task ran here with its
// driver, so its recovery is tried: the driver re-attaches, or releases
// what the task left (the task then starts again under its restart
// policy). Left out, the task failed at once as "driver not available"
// while its process or container could run on, untracked, beside the
// replacement the servers placed.
func (c *Client) restoreDriverSet() map[string]drivers.Driver {
	ds := maps.Clone(c.driverSet())
	if ds == nil {
		ds = map[string]drivers.Driver{}
	}
	for _, d := range c.cfg.Drivers {
		if ds[d.Name()] == nil {
			ds[d.Name()] = d
		}
	}
	return ds
}
