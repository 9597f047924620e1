package client

import (
	"math/rand/v2"
	"strings"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Timing of registration and heartbeats.
const (
	registerBackoffMin  = 250 * time.Millisecond
	registerBackoffMax  = 15 * time.Second
	heartbeatStaggerMax = 10 * time.Second
	defaultHeartbeatTTL = 10 * time.Second
)

// registerAndHeartbeat registers the node (retrying with backoff) and then
// heartbeats it every HeartbeatTTL; a "node not found" answer (the server
// lost the node, or an operator purged it) triggers a new registration.
// After registering again the client sends every allocation's state: a node
// that comes back with live allocations stays initializing until its client
// has told the servers what those allocations are doing now.
func (c *Client) registerAndHeartbeat() {
	first := true
	for !c.shuttingDown() {
		ttl, ok := c.retryRegister()
		if !ok {
			return
		}
		c.registeredOnce.Do(func() { close(c.registered) })
		if !first {
			c.sync.resendAll()
		}
		first = false

		wait := time.Duration(0)
		if !c.cfg.DevMode {
			wait = rand.N(min(heartbeatStaggerMax, ttl) + 1)
		}
		backoff := registerBackoffMin
		for {
			t := time.NewTimer(wait)
			again := false
			select {
			case <-c.shutdownCh:
				t.Stop()
				return
			case <-c.reregister:
				t.Stop()
				again = true
			case <-t.C:
			}
			if again {
				break
			}
			newTTL, err := c.heartbeat()
			if err == nil {
				backoff = registerBackoffMin
				wait = newTTL
				if wait <= 0 {
					wait = defaultHeartbeatTTL
				}
				continue
			}
			if isNodeNotFound(err) {
				c.logger.Info("server does not know this node, registering again", "error", err)
				break
			}
			c.logger.Warn("heartbeat failed", "error", err, "retry_in", backoff)
			wait = backoff
			backoff = min(backoff*2, registerBackoffMax)
		}
	}
}

func isNodeNotFound(err error) bool {
	if code, _ := structs.ErrorCode(err); code == 404 {
		return true
	}
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "node not found") || strings.Contains(s, "unknown node")
}

// retryRegister calls Node.Register until it succeeds (false on shutdown).
func (c *Client) retryRegister() (time.Duration, bool) {
	backoff := registerBackoffMin
	for {
		ttl, err := c.register()
		if err == nil {
			return ttl, true
		}
		c.logger.Warn("node registration failed", "error", err, "retry_in", backoff)
		if !c.sleep(backoff) {
			return 0, false
		}
		backoff = min(backoff*2, registerBackoffMax)
	}
}

func (c *Client) register() (time.Duration, error) {
	c.registerMu.Lock()
	defer c.registerMu.Unlock()
	node := c.Node()
	node.Status = structs.NodeStatusInit
	node.StatusUpdatedAt = c.now().Unix()
	req := &structs.NodeRegisterRequest{Node: node, WriteRequest: structs.WriteRequest{Region: c.cfg.Region}}
	var resp structs.NodeUpdateResponse
	if err := c.cfg.RPC.RPC("Node.Register", req, &resp); err != nil {
		return 0, err
	}
	c.hbStop.ok(c.now())
	c.logger.Info("node registered", "node_id", node.ID)
	ttl := resp.HeartbeatTTL
	if ttl <= 0 {
		ttl = defaultHeartbeatTTL
	}
	return ttl, nil
}

func (c *Client) heartbeat() (time.Duration, error) {
	req := &structs.NodeUpdateStatusRequest{
		NodeID: c.NodeID(), SecretID: c.secretID(), Status: structs.NodeStatusReady,
		UpdatedAt: c.now().Unix(), WriteRequest: structs.WriteRequest{Region: c.cfg.Region},
	}
	var resp structs.NodeUpdateResponse
	if err := c.cfg.RPC.RPC("Node.UpdateStatus", req, &resp); err != nil {
		return 0, err
	}
	c.hbStop.ok(c.now())
	c.nodeMu.Lock()
	c.node.Status = structs.NodeStatusReady
	c.nodeMu.Unlock()
	return resp.HeartbeatTTL, nil
}
