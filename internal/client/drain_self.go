package client

import (
	"fmt"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Draining itself on shutdown (client.drain_on_shutdown), as Nomad's client
// does: before a graceful shutdown the client asks the servers to drain its
// node (ineligible; every allocation migrated per its migrate block; system
// allocations last, or left alone with ignore_system_jobs; force stops all
// at once), then waits until the servers report the drain complete and
// every allocation it ran has stopped and been reported, at most the
// drain's deadline and a short grace. Only then does the agent stop.

// DrainOnShutdown is the client.drain_on_shutdown block.
type DrainOnShutdown struct {
	// Deadline bounds the drain; 0 is Nomad's default of one hour.
	Deadline         time.Duration
	Force            bool
	IgnoreSystemJobs bool
}

// selfDrainGrace is the time past the deadline given to the stops the
// deadline forced (a variable for tests).
var selfDrainGrace = 5 * time.Second

// Defaults and pacing of the self-drain.
const (
	defaultSelfDrainDeadline = time.Hour
	selfDrainPoll            = 250 * time.Millisecond
	selfDrainAsk             = 30 * time.Second
	selfDrainFlush           = 5 * time.Second
	selfDrainMessage         = "shutting down"
)

// DrainSelf drains the client's node if drain_on_shutdown is configured
// and waits for the drain (see above). Errors are returned for the agent to
// log; the shutdown goes on in any case.
func (c *Client) DrainSelf() error {
	spec := c.cfg.DrainOnShutdown
	if spec == nil || c.shuttingDown() || c.hurried() {
		return nil
	}
	// A client stopped right after it started (a restart, its node and
	// allocations known to the servers) may not have registered yet: it
	// is given selfDrainAsk to do so rather than skip the drain.
	wait := time.NewTimer(selfDrainAsk)
	defer wait.Stop()
	select {
	case <-c.registered:
	case <-wait.C:
		return fmt.Errorf("drain on shutdown: the node did not register within %s; nothing drained", selfDrainAsk)
	case <-c.hurryCh:
		return fmt.Errorf("drain on shutdown: abandoned before the node registered (told again to shut down)")
	}
	deadline := spec.Deadline
	if deadline <= 0 {
		deadline = defaultSelfDrainDeadline
	}
	ds := &structs.DrainSpec{Deadline: deadline, IgnoreSystemJobs: spec.IgnoreSystemJobs}
	if spec.Force {
		ds.Deadline = -1
	}
	start := time.Now()
	until := start.Add(deadline).Add(selfDrainGrace) // no Duration overflow near its max
	if spec.Force {
		until = start.Add(c.cfg.MaxKillTimeout + selfDrainGrace + selfDrainFlush)
	}
	c.logger.Info("draining this node before shutting down", "deadline", deadline, "force", spec.Force,
		"ignore_system_jobs", spec.IgnoreSystemJobs)
	req := &structs.NodeUpdateDrainRequest{NodeID: c.NodeID(), DrainSpec: ds,
		Meta:         map[string]string{"message": selfDrainMessage},
		WriteRequest: structs.WriteRequest{Region: c.cfg.Region, AuthToken: c.secretID()}}
	var resp structs.NodeDrainUpdateResponse
	// Servers that do not answer within selfDrainAsk cannot drain it.
	if err := c.rpcBefore(minTime(until, start.Add(selfDrainAsk)), "Node.UpdateDrain", req, &resp); err != nil {
		return fmt.Errorf("drain on shutdown: %w", err)
	}
	serverDone := false
	for {
		if !serverDone {
			serverDone = c.drainCompleteOnServer(until)
		}
		if serverDone && c.localAllocsStopped(spec.IgnoreSystemJobs) {
			c.sync.flush(min(selfDrainFlush, time.Until(until)))
			c.logger.Info("node drained; shutting down", "took", time.Since(start).Round(time.Millisecond))
			return nil
		}
		if time.Now().After(until) {
			// The deadline bounds the shutdown: the allocations the drain
			// stopped wait no more of their shutdown_delay.
			c.skipStoppedDelays()
			return fmt.Errorf("drain on shutdown: not complete after %s; shutting down anyway", time.Since(start).Round(time.Second))
		}
		select {
		case <-time.After(selfDrainPoll):
		case <-c.hurryCh:
			return fmt.Errorf("drain on shutdown: abandoned after %s (told again to shut down)", time.Since(start).Round(time.Second))
		}
	}
}

// skipStoppedDelays cuts the shutdown_delay of every allocation the
// servers stopped (those the drain moved): once the drain's deadline has
// passed, a delay of hours would hold the shutdown that follows.
func (c *Client) skipStoppedDelays() {
	for _, ar := range c.runners() {
		if ar.Alloc().ServerTerminalStatus() {
			ar.SkipShutdownDelay()
		}
	}
}

// drainCompleteOnServer reports whether the servers cleared the node's
// drain strategy (the drain completed).
func (c *Client) drainCompleteOnServer(until time.Time) bool {
	req := &structs.NodeSpecificRequest{NodeID: c.NodeID(), SecretID: c.secretID(),
		QueryOptions: structs.QueryOptions{Region: c.cfg.Region, AuthToken: c.secretID()}}
	var resp structs.SingleNodeResponse
	if err := c.rpcBefore(until, "Node.GetNode", req, &resp); err != nil {
		c.logger.Debug("drain on shutdown: node status", "error", err)
		return false
	}
	return resp.Node != nil && resp.Node.DrainStrategy == nil
}

// localAllocsStopped reports whether every allocation this client runs has
// stopped (system ones aside when the drain ignores them).
func (c *Client) localAllocsStopped(ignoreSystem bool) bool {
	for _, ar := range c.runners() {
		a := ar.Alloc()
		if ignoreSystem && a.Job != nil && (a.Job.Type == structs.JobTypeSystem || a.Job.Type == structs.JobTypeSysBatch) {
			continue
		}
		select {
		case <-ar.WaitCh():
		default:
			return false
		}
	}
	return true
}

// rpcBefore makes an RPC, giving up waiting for it at until.
func (c *Client) rpcBefore(until time.Time, method string, args, reply any) error {
	done := make(chan error, 1)
	go func() { done <- c.cfg.RPC.RPC(method, args, reply) }()
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%s: no answer before the drain's deadline", method)
	case <-c.hurryCh:
		return fmt.Errorf("%s: abandoned (told again to shut down)", method)
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
