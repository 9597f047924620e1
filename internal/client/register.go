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
// lost the node, or an operator purged it) triggers a new registration, as
// does a changed fingerprint (which only updates the node). After
// registering again for a lost node the client sends every allocation's
// state: a node that comes back with live allocations stays initializing
// until its client has told the servers what those allocations are doing
// now. A heartbeat
// that succeeds after failures other than "No cluster leader" (no server
// answered: they were down, or this node was cut off) does the same:
// meanwhile the servers may have marked the node down and its allocations
// lost, and what they last acknowledged from this client no longer holds.
func (c *Client) registerAndHeartbeat() {
	resync := false
	for !c.shuttingDown() {
		ttl, retried, ok := c.retryRegister()
		if !ok {
			return
		}
		c.registeredOnce.Do(func() { close(c.registered) })
		if resync || retried {
			c.sync.resendAll()
		}
		// A registration asked for by a changed fingerprint (the loop's
		// reregister) needs no resend by itself: the servers lost nothing,
		// and the node keeps its status. Only a lost node or failed
		// heartbeats do.
		resync = false

		wait := time.Duration(0)
		if !c.cfg.DevMode {
			wait = rand.N(min(heartbeatStaggerMax, ttl) + 1)
		}
		backoff := registerBackoffMin
		failed := false
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
				resync = failed
				break
			}
			newTTL, err := c.heartbeat()
			if err == nil && failed {
				c.logger.Info("servers answer again, registering and sending every allocation's state")
				resync = true
				break
			}
			if err == nil {
				backoff = registerBackoffMin
				wait = newTTL
				if wait <= 0 {
					wait = defaultHeartbeatTTL
				}
				wait = c.identity.retryWait(wait)
				continue
			}
			if isNodeNotFound(err) {
				c.logger.Info("server does not know this node, registering again", "error", err)
				resync = true
				break
			}
			// "No cluster leader" is an answer: the servers are reachable
			// and a new leader gives every node a failover TTL, so nothing
			// was lost meanwhile and registering again would only add
			// writes to an election. So is "leadership lost while
			// committing log" (the heartbeat met an election).
			failed = failed || !(isNoLeader(err) || isLeadershipLost(err))
			wait = jitter(backoff)
			c.logger.Warn("heartbeat failed", "error", err, "retry_in", wait)
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

func isNoLeader(err error) bool {
	return strings.Contains(err.Error(), structs.ErrNoLeader.Error())
}

func isLeadershipLost(err error) bool {
	return strings.Contains(err.Error(), structs.ErrLeadershipLost.Error())
}

// retryRegister calls Node.Register until it succeeds (false on shutdown);
// retried says some call failed first (the servers may have lost the node
// meanwhile).
func (c *Client) retryRegister() (ttl time.Duration, retried, ok bool) {
	backoff := registerBackoffMin
	for {
		ttl, err := c.register()
		if err == nil {
			return ttl, retried, true
		}
		retried = true
		wait := jitter(backoff)
		c.logger.Warn("node registration failed", "error", err, "retry_in", wait)
		if !c.sleep(wait) {
			return 0, retried, false
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
	c.learnServers(resp.Servers)
	if resp.SignedIdentity != "" {
		c.identity.set(resp.SignedIdentity)
	}
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
		ForceIdentityRenewal: c.identity.wanted(c.now()),
	}
	var resp structs.NodeUpdateResponse
	if err := c.cfg.RPC.RPC("Node.UpdateStatus", req, &resp); err != nil {
		return 0, err
	}
	c.hbStop.ok(c.now())
	c.learnServers(resp.Servers)
	if resp.SignedIdentity != "" {
		c.identity.set(resp.SignedIdentity)
	}
	c.nodeMu.Lock()
	c.node.Status = structs.NodeStatusReady
	c.nodeMu.Unlock()
	return resp.HeartbeatTTL, nil
}

// learnServers hands the servers an answer named to the agent's server
// manager, when it keeps one.
func (c *Client) learnServers(infos []*structs.NodeServerInfo) {
	l, ok := c.cfg.RPC.(ServerLearner)
	if !ok || len(infos) == 0 {
		return
	}
	addrs := make([]string, 0, len(infos))
	for _, s := range infos {
		if s != nil && s.RPCAdvertiseAddr != "" {
			addrs = append(addrs, s.RPCAdvertiseAddr)
		}
	}
	l.SetServers(addrs)
}

// jitter is d plus up to half of d at random, so clients cut off together
// do not retry in lockstep.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d + rand.N(d/2+1)
}
