package client

import (
	"errors"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/client/allocrunner"
	"github.com/drover-project/drover/internal/client/state"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

// leaveFlushTimeout bounds how long Leave waits for the servers to hear the
// final state of the tasks it stopped.
const leaveFlushTimeout = 5 * time.Second

// openState opens the client's state database (none in dev mode: nothing a
// dev agent runs survives it, as in Nomad).
func openState(cfg Config) (*state.DB, error) {
	if cfg.DevMode {
		return nil, nil
	}
	return state.Open(filepath.Join(cfg.StateDir, state.FileName))
}

// restoreState rebuilds an alloc runner for every allocation stored by an
// earlier client process, before the first pull from the servers. Tasks
// still running are re-attached at once and tasks that ended while the
// client was down are reported with their exit codes; anything that would
// start a task waits for the first successful pull (serversContacted), so
// that an allocation the servers stopped or removed meanwhile is stopped,
// never started again.
func (c *Client) restoreState() {
	recs, err := c.state.Allocs()
	var damaged *state.DamagedError
	switch {
	case errors.As(err, &damaged):
		for _, p := range damaged.Problems {
			c.logger.Warn("client state: a damaged record was dropped", "error", p)
		}
	case err != nil:
		c.logger.Error("failed to load client state; starting without it", "error", err)
		return
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Alloc.ID < recs[j].Alloc.ID })
	var restored []*allocrunner.AllocRunner
	for _, rec := range recs {
		a := rec.Alloc
		if a.NodeID != "" && a.NodeID != c.NodeID() {
			c.logger.Warn("dropping stored allocation of another node", "alloc_id", a.ID, "node_id", a.NodeID)
			_ = c.state.DeleteAlloc(a.ID)
			continue
		}
		ar, err := c.newAllocRunner(a, c.serversContacted, c.restoreDriverSet(), nil)
		if err != nil {
			c.logger.Error("failed to restore allocation", "alloc_id", a.ID, "error", err)
			continue
		}
		ar.Restore(rec)
		c.allocMu.Lock()
		c.allocs[a.ID] = ar
		c.allocIndex[a.ID] = a.AllocModifyIndex
		c.allocMu.Unlock()
		restored = append(restored, ar)
	}
	for _, ar := range restored {
		ar.Start()
	}
	if len(restored) > 0 {
		c.logger.Info("restored allocations from client state", "count", len(restored))
	}
}

// newAllocRunner builds the runner of an allocation on this node, its tasks
// run with ds; hold, if set, delays starting them; prev, if set, is the
// previous allocation whose data it takes over (migrate_prev.go).
func (c *Client) newAllocRunner(a *structs.Allocation, hold <-chan struct{}, ds map[string]drivers.Driver, prev allocrunner.PrevAlloc) (*allocrunner.AllocRunner, error) {
	cfg := allocrunner.Config{
		Alloc: a, Node: c.Node(), Region: c.cfg.Region, AllocRoot: c.cfg.AllocDir,
		Drivers: ds, MaxKillTimeout: c.cfg.MaxKillTimeout,
		StateUpdater: c.sync.allocStateUpdated, Logger: c.logger, Clock: c.now,
		NewAllocDir: newAllocDir, StartLogs: startLogs, BuildEnv: buildEnv, InterpolateConfig: interpolateConfig,
		ReserveDevices: c.reserveDevices, SignIdentities: c.signIdentities, TaskAPI: &c.taskAPI, Artifacts: c.cfg.Artifacts, Hold: hold, Services: serviceRPC{c},
		Templates:          templateBackend{c},
		NetworkUnavailable: c.bridgeReason, Cpusets: c.cpusets, PrevAlloc: prev,
	}
	if c.bridge != nil {
		cfg.Network = c.bridge
	}
	if c.state != nil {
		cfg.StateDB = c.state
	}
	return allocrunner.New(cfg)
}

// persistAlloc stores the server's copy of an allocation before the client
// acts on it.
func (c *Client) persistAlloc(a *structs.Allocation) {
	if a.Job == nil {
		// Never stored without its job: a restore could not run it.
		c.logger.Warn("not persisting an allocation without its job", "alloc_id", a.ID)
		return
	}
	if err := c.state.PutAlloc(a); err != nil {
		c.logger.Error("failed to persist allocation", "alloc_id", a.ID, "error", err)
	}
}

// runners returns every alloc runner.
func (c *Client) runners() []*allocrunner.AllocRunner {
	c.allocMu.RLock()
	defer c.allocMu.RUnlock()
	out := make([]*allocrunner.AllocRunner, 0, len(c.allocs))
	for _, ar := range c.allocs {
		out = append(out, ar)
	}
	return out
}

// Leave stops every task this client runs, waits for them and gives the
// servers a few seconds to hear their final states: the agent is leaving
// (leave_on_interrupt / leave_on_terminate), so nothing must be left
// running behind it. Call it before Shutdown.
func (c *Client) Leave() {
	runners := c.runners()
	var wg sync.WaitGroup
	for _, ar := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ar.Kill("client leaving")
			ar.Start() // never started (held): let its tasks end
			<-ar.WaitCh()
		}()
	}
	wg.Wait()
	c.sync.flush(leaveFlushTimeout)
}

// flush waits until the servers acknowledged the current client status of
// every allocation, or timeout.
func (s *allocSync) flush(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		done := true
		for _, ar := range s.c.runners() {
			cur := ar.Alloc().ClientStatus
			s.mu.Lock()
			acked := s.acked[ar.ID()]
			s.mu.Unlock()
			if acked == nil || acked.ClientStatus != cur {
				done = false
				break
			}
		}
		if done || time.Now().After(deadline) {
			if !done {
				s.c.logger.Warn("servers did not acknowledge every stopped allocation before the client left")
			}
			return
		}
		if !s.c.sleep(50 * time.Millisecond) {
			return
		}
	}
}
