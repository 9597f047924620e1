package client

import (
	"fmt"
	"sort"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Timing of the alloc watcher.
const (
	allocWatchMaxQueryTime = 5 * time.Minute
	allocWatchBackoffMin   = 250 * time.Millisecond
	allocWatchBackoffMax   = 10 * time.Second
	allocFetchAttempts     = 5
)

// rpcUntilShutdown runs a (possibly blocking) RPC, giving up waiting for it
// on shutdown.
func (c *Client) rpcUntilShutdown(method string, args, reply any) (error, bool) {
	done := make(chan error, 1)
	go func() { done <- c.cfg.RPC.RPC(method, args, reply) }()
	select {
	case err := <-done:
		return err, true
	case <-c.shutdownCh:
		return nil, false
	}
}

// watchAllocations pulls the node's allocations with blocking queries and
// applies the differences to the alloc runners.
func (c *Client) watchAllocations() {
	select {
	case <-c.registered:
	case <-c.shutdownCh:
		return
	}
	var index uint64
	backoff := allocWatchBackoffMin
	for !c.shuttingDown() {
		req := &structs.NodeSpecificRequest{
			NodeID: c.NodeID(), SecretID: c.secretID(), ChangedAllocs: true,
			QueryOptions: structs.QueryOptions{
				Region: c.cfg.Region, MinQueryIndex: index, MaxQueryTime: allocWatchMaxQueryTime,
				AllowStale: c.contacted(),
			},
		}
		var resp structs.NodeClientAllocsResponse
		err, ok := c.rpcUntilShutdown("Node.GetClientAllocs", req, &resp)
		if !ok {
			return
		}
		if err != nil {
			c.logger.Warn("failed to pull allocations", "error", err, "retry_in", backoff)
			if isNodeNotFound(err) {
				c.triggerReregister()
			}
			if !c.sleep(jitter(backoff)) {
				return
			}
			backoff = min(backoff*2, allocWatchBackoffMax)
			continue
		}
		c.keepMigrateTokens(resp.MigrateTokens)
		if err := c.applyAllocs(resp.Allocs, resp.Changed); err != nil {
			c.logger.Warn("failed to fetch allocations", "error", err, "retry_in", backoff)
			if !c.sleep(jitter(backoff)) {
				return
			}
			backoff = min(backoff*2, allocWatchBackoffMax)
			continue
		}
		backoff = allocWatchBackoffMin
		c.serversContactedOnce.Do(func() { close(c.serversContacted) })
		if resp.Index < index {
			// The servers' index went backwards (new cluster, restore):
			// start over rather than block on an index never reached.
			index = 0
			continue
		}
		index = resp.Index
	}
}

func (c *Client) contacted() bool {
	select {
	case <-c.serversContacted:
		return true
	default:
		return false
	}
}

func (c *Client) triggerReregister() {
	select {
	case c.reregister <- struct{}{}:
	default:
	}
}

// applyAllocs diffs the server's alloc→AllocModifyIndex map against local
// copies, takes what changed from the pull's changed allocations or else
// fetches it, and starts, updates or destroys runners.
func (c *Client) applyAllocs(server map[string]uint64, changed []*structs.Allocation) error {
	c.allocMu.RLock()
	var pull, removed []string
	for id, idx := range server {
		if local, ok := c.allocIndex[id]; !ok || idx > local {
			pull = append(pull, id)
		}
	}
	for id := range c.allocIndex {
		if _, ok := server[id]; !ok {
			removed = append(removed, id)
		}
	}
	c.allocMu.RUnlock()
	sort.Strings(pull)
	fetched, pull, maxIndex := takeChanged(pull, server, changed)
	if len(pull) > 0 {
		more, err := c.fetchAllocs(pull, maxIndex)
		if err != nil {
			return err
		}
		fetched = append(fetched, more...)
	}

	for _, id := range removed {
		c.removeAlloc(id)
	}
	for _, a := range fetched {
		c.allocMu.RLock()
		ar, exists := c.allocs[a.ID]
		_, known := c.allocIndex[a.ID]
		c.allocMu.RUnlock()
		switch {
		case exists:
			c.persistAlloc(a)
			ar.Update(a)
			c.applyRestartRequest(ar, a)
		case known:
			// Seen before and never run (terminal when it arrived).
		case a.ServerTerminalStatus() && !a.ClientTerminalStatus():
			// Stopped before this client ran it: nothing to run, but the
			// servers must hear it is done, or it would hold the node's
			// resources (and count as starting) for good.
			c.sync.reportNotRun(a)
		case a.TerminalStatus():
			// Nothing to run: the server wants it stopped or the client
			// already finished it (e.g. before this client restarted).
		default:
			if err := c.addAlloc(a); err != nil {
				c.logger.Error("failed to start allocation", "alloc_id", a.ID, "error", err)
			}
		}
		c.allocMu.Lock()
		c.allocIndex[a.ID] = a.AllocModifyIndex
		c.allocMu.Unlock()
	}
	return nil
}

// takeChanged splits the IDs to pull into the allocations the pull already
// carried (at least as new as the server's map says) and the IDs still to
// fetch, with the highest AllocModifyIndex among those.
func takeChanged(pull []string, server map[string]uint64, changed []*structs.Allocation) (have []*structs.Allocation, fetch []string, maxIndex uint64) {
	byID := make(map[string]*structs.Allocation, len(changed))
	for _, a := range changed {
		byID[a.ID] = a
	}
	for _, id := range pull {
		if a := byID[id]; a != nil && a.AllocModifyIndex >= server[id] {
			have = append(have, a)
			continue
		}
		fetch = append(fetch, id)
		maxIndex = max(maxIndex, server[id])
	}
	return have, fetch, maxIndex
}

// fetchAllocs gets full allocations, retrying while a stale server has not
// caught up with all of them.
func (c *Client) fetchAllocs(ids []string, maxIndex uint64) ([]*structs.Allocation, error) {
	minIndex := uint64(0)
	if maxIndex > 0 {
		minIndex = maxIndex - 1
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var got []*structs.Allocation
	for attempt := 0; attempt < allocFetchAttempts; attempt++ {
		req := &structs.AllocsGetRequest{AllocIDs: ids, QueryOptions: structs.QueryOptions{
			Region: c.cfg.Region, MinQueryIndex: minIndex, MaxQueryTime: 10 * time.Second, AllowStale: true,
			AuthToken: c.secretID(),
		}}
		var resp structs.AllocsGetResponse
		err, ok := c.rpcUntilShutdown("Alloc.GetAllocs", req, &resp)
		if !ok {
			return nil, fmt.Errorf("shutting down")
		}
		if err != nil {
			return nil, err
		}
		got = got[:0]
		for _, a := range resp.Allocs {
			if a != nil && want[a.ID] {
				got = append(got, a)
			}
		}
		if len(got) == len(ids) {
			return got, nil
		}
		if !c.sleep(time.Duration(attempt+1) * 50 * time.Millisecond) {
			return nil, fmt.Errorf("shutting down")
		}
	}
	return nil, fmt.Errorf("server returned %d of %d allocations", len(got), len(ids))
}

func (c *Client) addAlloc(a *structs.Allocation) error {
	ar, err := c.newAllocRunner(a, nil, c.driverSet(), c.prevAllocOf(a))
	if err != nil {
		return err
	}
	c.persistAlloc(a)
	c.allocMu.Lock()
	c.allocs[a.ID] = ar
	c.allocMu.Unlock()
	ar.Start()
	return nil
}

// removeAlloc destroys an allocation the servers garbage collected.
func (c *Client) removeAlloc(id string) {
	c.allocMu.Lock()
	ar := c.allocs[id]
	delete(c.allocs, id)
	delete(c.allocIndex, id)
	c.allocMu.Unlock()
	c.sync.forget(id)
	if ar == nil {
		return
	}
	go func() {
		if err := ar.Destroy(); err != nil {
			// Kept in the client's state, as garbage collection keeps it:
			// the next client process finds it, learns the servers no
			// longer have it and destroys it again. Deleted, its
			// directory was never removed.
			c.logger.Warn("failed to destroy allocation; destroyed again after the agent restarts", "alloc_id", id, "error", err)
			return
		}
		if err := c.state.DeleteAlloc(id); err != nil {
			c.logger.Warn("failed to remove allocation from client state", "alloc_id", id, "error", err)
		}
	}()
}
