package client

import (
	"fmt"

	"github.com/drover-project/drover/internal/client/bridgenet"
)

// BridgeAttribute is the node attribute saying the node runs groups in
// network mode "bridge" (Nomad's CNI fingerprint sets it when it finds
// the bridge plugin); the scheduler places bridge groups only there.
const BridgeAttribute = "plugins.cni.version.bridge"

// setupBridge validates the bridge configuration and, when this node can
// run bridge networks, builds their manager.
func (c *Client) setupBridge() error {
	m, err := bridgenet.New(bridgenet.Config{BridgeName: c.cfg.BridgeNetworkName,
		Subnet: c.cfg.BridgeNetworkSubnet, StateDir: c.cfg.StateDir})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if ok, why := bridgenet.Supported(); !ok {
		c.bridgeReason = why
		c.logger.Debug("bridge networking unavailable", "reason", why)
		return nil
	}
	c.bridge = m
	return nil
}
