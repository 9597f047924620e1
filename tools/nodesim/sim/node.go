package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/structs"
)

// Node modes.
const (
	modeOK int32 = iota
	modeFailed
	modeLost
)

// Timing of the pull loop.
const (
	pullMaxQueryTime = 5 * time.Minute
	pullBackoffMin   = 250 * time.Millisecond
	pullBackoffMax   = 10 * time.Second
	// A pull answered faster than this without a newer index did not block:
	// back off before asking again instead of spinning.
	pullMinBlock  = 50 * time.Millisecond
	fetchAttempts = 5
)

// node is one simulated client. It keeps IDs and a small state per
// allocation; the registered Node value is rebuilt on demand.
type node struct {
	s      *Sim
	idx    int
	id     string
	secret string
	pool   *rpc.Pool
	server string
	mode   atomic.Int32

	mu       sync.Mutex
	allocs   map[string]*alloc
	dirty    map[string]struct{}
	flushing bool // a flush is scheduled
	hb       *time.Timer
}

// alloc is what a node remembers of one allocation.
type alloc struct {
	modIdx     uint64
	tasks      []string // shared, never modified
	batch      bool
	status     string
	startedAt  int64 // unix nanos
	finishedAt int64
	// deployment is the deployment the allocation belongs to now (an
	// in-place update moves it to a new one); healthFor is the deployment
	// its health was last reported for, and since when it counts as
	// running in deployment (the later of its start and the move).
	deployment  string
	healthFor   string
	deploySince int64
}

func newNode(s *Sim, i int) *node {
	return &node{
		s: s, idx: i, id: uuid.NewString(), secret: uuid.NewString(),
		pool:   s.pools[i%len(s.pools)],
		server: s.cfg.Servers[i%len(s.cfg.Servers)],
		allocs: map[string]*alloc{},
	}
}

func (n *node) name() string { return fmt.Sprintf("%s-%d", n.s.cfg.NamePrefix, n.idx) }

// spec builds the Node sent at registration.
func (n *node) spec() *structs.Node {
	c := n.s.cfg
	return &structs.Node{
		ID: n.id, SecretID: n.secret, Name: n.name(), Datacenter: c.Datacenter,
		Status: structs.NodeStatusInit, StatusUpdatedAt: time.Now().Unix(),
		SchedulingEligibility: structs.NodeSchedulingEligible,
		Attributes: map[string]string{
			"kernel.name": "linux", "os.name": "nodesim", "cpu.arch": "amd64",
			"driver.raw_exec": "1", "nomad.version": "1.10.0",
			"unique.network.ip-address": "127.0.0.1", "unique.hostname": n.name(),
		},
		Drivers: map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
		NodeResources: &structs.NodeResources{
			Cpu:    structs.NodeCpuResources{CpuShares: c.CPU},
			Memory: structs.NodeMemoryResources{MemoryMB: c.MemoryMB},
			Disk:   structs.NodeDiskResources{DiskMB: c.DiskMB},
			NodeNetworks: []*structs.NodeNetworkResource{{Mode: "host", Device: "lo",
				Addresses: []structs.NodeNetworkAddress{{Alias: "default", Address: "127.0.0.1", Family: "ipv4"}}}},
			MinDynamicPort: 20000, MaxDynamicPort: 32000,
		},
	}
}

// register sends Node.Register then a ready heartbeat, and arms the
// heartbeat timer with the TTL the server answered.
func (n *node) register() error {
	req := &structs.NodeRegisterRequest{Node: n.spec(), WriteRequest: structs.WriteRequest{Region: n.s.cfg.Region}}
	var resp structs.NodeUpdateResponse
	if err := n.s.call(n, "Node.Register", req, &resp); err != nil {
		return err
	}
	ttl, err := n.heartbeat()
	if err != nil {
		return err
	}
	n.s.registered.Add(1)
	n.armHeartbeat(ttl)
	return nil
}

func (n *node) registerRetry(ctx context.Context) error {
	backoff := pullBackoffMin
	var err error
	for attempt := 0; attempt < 8; attempt++ {
		if err = n.register(); err == nil {
			return nil
		}
		n.s.logErr("Node.Register", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		case <-n.s.stop:
			return err
		}
		backoff = min(backoff*2, pullBackoffMax)
	}
	return err
}

func (n *node) heartbeat() (time.Duration, error) {
	req := &structs.NodeUpdateStatusRequest{NodeID: n.id, SecretID: n.secret, Status: structs.NodeStatusReady,
		UpdatedAt: time.Now().Unix(), WriteRequest: structs.WriteRequest{Region: n.s.cfg.Region}}
	var resp structs.NodeUpdateResponse
	if err := n.s.call(n, "Node.UpdateStatus", req, &resp); err != nil {
		return 0, err
	}
	n.s.heartbeats.Add(1)
	ttl := resp.HeartbeatTTL
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	return ttl, nil
}

// armHeartbeat schedules the next heartbeat; no goroutine waits meanwhile.
func (n *node) armHeartbeat(d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mode.Load() == modeLost || n.s.stopped() {
		return
	}
	if n.hb != nil {
		n.hb.Stop()
	}
	n.hb = time.AfterFunc(d, n.beat)
}

func (n *node) beat() {
	if n.mode.Load() == modeLost || n.s.stopped() {
		return
	}
	ttl, err := n.heartbeat()
	switch {
	case err == nil:
		n.armHeartbeat(ttl)
	case isNotFound(err):
		n.s.logErr("Node.UpdateStatus", err)
		if err := n.register(); err != nil {
			n.armHeartbeat(time.Second)
		}
	default:
		n.s.logErr("Node.UpdateStatus", err)
		n.armHeartbeat(time.Second)
	}
}

func (n *node) stopTimers() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.hb != nil {
		n.hb.Stop()
	}
}

func isNotFound(err error) bool {
	if code, _ := structs.ErrorCode(err); code == 404 {
		return true
	}
	return strings.Contains(strings.ToLower(err.Error()), "node not found")
}

func (n *node) gone() bool { return n.mode.Load() == modeLost || n.s.stopped() }

// pullLoop is the node's one goroutine: it parks in a blocking
// Node.GetClientAllocs and applies each answer. An answer that does not move
// the index forward and came back quickly is followed by a growing pause, so
// a misbehaving server can never make 10,000 nodes spin.
func (n *node) pullLoop() {
	var index uint64
	backoff := pullBackoffMin
	pause := func() bool {
		select {
		case <-time.After(backoff):
		case <-n.s.stop:
			return false
		}
		backoff = min(backoff*2, pullBackoffMax)
		return true
	}
	for !n.gone() {
		req := &structs.NodeSpecificRequest{NodeID: n.id, SecretID: n.secret, ChangedAllocs: true, QueryOptions: structs.QueryOptions{
			Region: n.s.cfg.Region, MinQueryIndex: index, AllowStale: index > 0,
			MaxQueryTime: pullMaxQueryTime + rand.N(pullMaxQueryTime/16),
		}}
		var resp pullAnswer
		start := time.Now()
		err := n.s.call(n, "Node.GetClientAllocs", req, &resp)
		if n.gone() {
			return
		}
		n.s.pulls.Add(1)
		if err != nil {
			n.s.logErr("Node.GetClientAllocs", err)
			if isNotFound(err) {
				n.register()
			}
			if !pause() {
				return
			}
			continue
		}
		if err := n.apply(resp.Allocs, resp.Changed); err != nil {
			n.s.logErr("Alloc.GetAllocs", err)
			if !pause() {
				return
			}
			continue
		}
		if resp.Index <= index && time.Since(start) < pullMinBlock {
			n.s.emptyPulls.Add(1)
			if !pause() {
				return
			}
		} else {
			backoff = pullBackoffMin
		}
		if resp.Index < index {
			index = 0 // the server's index went backwards: start over
			continue
		}
		index = resp.Index
	}
}

// apply diffs the server's alloc->AllocModifyIndex map against the node's,
// takes what changed from the pull's changed allocations or else fetches
// it, and starts the simulated driver on new allocations.
func (n *node) apply(server map[string]uint64, changed []*wireAlloc) error {
	byID := make(map[string]*wireAlloc, len(changed))
	for _, a := range changed {
		byID[a.ID] = a
	}
	n.mu.Lock()
	var pull []string
	var have []*wireAlloc
	var maxIdx uint64
	for id, idx := range server {
		if a := n.allocs[id]; a == nil || idx > a.modIdx {
			if c := byID[id]; c != nil && c.AllocModifyIndex >= idx {
				have = append(have, c)
				continue
			}
			pull = append(pull, id)
			maxIdx = max(maxIdx, idx)
		}
	}
	for id := range n.allocs {
		if _, ok := server[id]; !ok {
			delete(n.allocs, id) // garbage-collected by the servers
			delete(n.dirty, id)
		}
	}
	n.mu.Unlock()
	if len(pull)+len(have) == 0 {
		return nil
	}
	fetched := have
	if len(pull) > 0 {
		sort.Strings(pull)
		more, err := n.fetch(pull, maxIdx)
		if err != nil {
			return err
		}
		fetched = append(fetched, more...)
	}

	var started []string
	n.mu.Lock()
	for _, a := range fetched {
		cur := n.allocs[a.ID]
		if cur == nil {
			n.s.allocsSeen.Add(1)
			cur = &alloc{tasks: n.s.taskNames(a), batch: a.Job != nil && a.Job.Type == structs.JobTypeBatch,
				status: a.ClientStatus, deployment: a.DeploymentID}
			n.allocs[a.ID] = cur
			if !a.terminal() {
				cur.status = structs.AllocClientStatusPending
				started = append(started, a.ID)
			}
		} else if a.serverTerminal() && !isTerminal(cur.status) {
			// Stopped by the servers: the task "exits" at once.
			cur.status = structs.AllocClientStatusComplete
			cur.finishedAt = time.Now().UnixNano()
			n.markDirtyLocked(a.ID)
		} else if a.DeploymentID != cur.deployment && !a.terminal() {
			// Updated in place into a new deployment: its health counts anew.
			cur.deployment, cur.deploySince = a.DeploymentID, time.Now().UnixNano()
			if cur.status == structs.AllocClientStatusRunning {
				n.healthLater(a.ID)
			}
		}
		cur.modIdx = a.AllocModifyIndex
	}
	n.mu.Unlock()
	if len(started) > 0 {
		time.AfterFunc(n.s.cfg.RunDelay, func() { n.started(started) })
	}
	return nil
}

// fetch gets the full allocations, retrying while a stale answer misses some.
func (n *node) fetch(ids []string, maxIdx uint64) ([]*wireAlloc, error) {
	minIdx := uint64(0)
	if maxIdx > 0 {
		minIdx = maxIdx - 1
	}
	var lastErr error
	for attempt := 0; attempt < fetchAttempts; attempt++ {
		req := &structs.AllocsGetRequest{AllocIDs: ids, QueryOptions: structs.QueryOptions{
			Region: n.s.cfg.Region, MinQueryIndex: minIdx, MaxQueryTime: 10 * time.Second, AllowStale: true}}
		var resp allocsAnswer
		n.s.fetches.Add(1)
		if err := n.s.call(n, "Alloc.GetAllocs", req, &resp); err != nil {
			lastErr = err
		} else if len(resp.Allocs) == len(ids) {
			return resp.Allocs, nil
		} else {
			lastErr = fmt.Errorf("asked for %d allocations, got %d", len(ids), len(resp.Allocs))
		}
		if n.gone() {
			return nil, lastErr
		}
		time.Sleep(pullBackoffMin)
	}
	return nil, lastErr
}

func isTerminal(status string) bool {
	switch status {
	case structs.AllocClientStatusComplete, structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
		return true
	}
	return false
}

// started is the simulated driver: the allocations are now running (or
// failed, on a failed node); batch ones complete after BatchDuration.
func (n *node) started(ids []string) {
	if n.gone() {
		return
	}
	now := time.Now().UnixNano()
	failed := n.mode.Load() == modeFailed
	var batch []string
	n.mu.Lock()
	for _, id := range ids {
		a := n.allocs[id]
		if a == nil || a.status != structs.AllocClientStatusPending {
			continue
		}
		a.startedAt = now
		if failed {
			a.status, a.finishedAt = structs.AllocClientStatusFailed, now
		} else {
			a.status = structs.AllocClientStatusRunning
			a.deploySince = now
			if a.batch {
				batch = append(batch, id)
			}
			if a.deployment != "" && n.s.cfg.HealthyAfter > 0 {
				n.healthLater(id)
			}
		}
		n.markDirtyLocked(id)
	}
	n.mu.Unlock()
	if len(batch) > 0 {
		time.AfterFunc(n.s.cfg.BatchDuration, func() { n.finish(batch) })
	}
}

func (n *node) finish(ids []string) {
	if n.gone() {
		return
	}
	now := time.Now().UnixNano()
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, id := range ids {
		if a := n.allocs[id]; a != nil && a.status == structs.AllocClientStatusRunning {
			a.status, a.finishedAt = structs.AllocClientStatusComplete, now
			n.markDirtyLocked(id)
		}
	}
}

// healthLater queues the allocation's health report for when it has run
// HealthyAfter in its deployment.
func (n *node) healthLater(id string) {
	time.AfterFunc(n.s.cfg.HealthyAfter, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		if a := n.allocs[id]; a != nil && a.status == structs.AllocClientStatusRunning && a.healthFor != a.deployment {
			n.markDirtyLocked(id)
		}
	})
}

// markDirtyLocked queues an allocation's state for the next push; the first
// dirty allocation schedules a push SyncInterval later, batching the rest.
func (n *node) markDirtyLocked(id string) {
	if n.dirty == nil {
		n.dirty = map[string]struct{}{}
	}
	n.dirty[id] = struct{}{}
	if !n.flushing {
		n.flushing = true
		time.AfterFunc(n.s.cfg.SyncInterval, n.flush)
	}
}

// flush pushes the dirty allocations' states in one Node.UpdateAlloc.
func (n *node) flush() {
	if n.gone() {
		return
	}
	n.s.sem <- struct{}{}
	defer func() { <-n.s.sem }()

	n.mu.Lock()
	batch := make([]*structs.Allocation, 0, len(n.dirty))
	var running, done, failed int64
	for id := range n.dirty {
		a := n.allocs[id]
		if a == nil {
			continue
		}
		batch = append(batch, n.stripped(id, a))
		switch a.status {
		case structs.AllocClientStatusRunning:
			running++
		case structs.AllocClientStatusComplete:
			done++
		case structs.AllocClientStatusFailed:
			failed++
		}
	}
	sent := n.dirty
	n.dirty = nil
	n.flushing = false
	n.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	req := &structs.AllocUpdateRequest{Alloc: batch, UpdatedAt: time.Now().UnixNano(),
		WriteRequest: structs.WriteRequest{Region: n.s.cfg.Region}}
	var resp structs.GenericResponse
	if err := n.s.call(n, "Node.UpdateAlloc", req, &resp); err != nil {
		n.s.logErr("Node.UpdateAlloc", err)
		n.mu.Lock()
		for _, a := range batch {
			if cur := n.allocs[a.ID]; cur != nil && a.DeploymentStatus != nil {
				cur.healthFor = "" // not delivered: report it again
			}
		}
		for id := range sent {
			n.markDirtyLocked(id) // retried after another SyncInterval
		}
		n.mu.Unlock()
		return
	}
	n.s.updates.Add(1)
	n.s.reportedRun.Add(running)
	n.s.reportedDone.Add(done)
	n.s.reportedFail.Add(failed)
	if running > 0 {
		n.s.lastRunningAck.Store(time.Now().UnixNano())
	}
}

// stripped is the client-owned part of an allocation, as a real client sends it.
func (n *node) stripped(id string, a *alloc) *structs.Allocation {
	state := structs.TaskStateRunning
	switch a.status {
	case structs.AllocClientStatusPending:
		state = structs.TaskStatePending
	case structs.AllocClientStatusComplete, structs.AllocClientStatusFailed:
		state = structs.TaskStateDead
	}
	ts := make(map[string]*structs.TaskState, len(a.tasks))
	for _, t := range a.tasks {
		s := &structs.TaskState{State: state, Failed: a.status == structs.AllocClientStatusFailed}
		if a.startedAt != 0 {
			s.StartedAt = time.Unix(0, a.startedAt).UTC()
		}
		if a.finishedAt != 0 {
			s.FinishedAt = time.Unix(0, a.finishedAt).UTC()
		}
		ts[t] = s
	}
	out := &structs.Allocation{ID: id, NodeID: n.id, ClientStatus: a.status, TaskStates: ts}
	if a.status == structs.AllocClientStatusRunning && a.deployment != "" && a.healthFor != a.deployment &&
		time.Since(time.Unix(0, a.deploySince)) >= n.s.cfg.HealthyAfter {
		healthy := true
		out.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: time.Now().UTC()}
		a.healthFor = a.deployment
	}
	return out
}

// lose stops the node's heartbeats and pulls for good.
func (n *node) lose() {
	if n.mode.Swap(modeLost) != modeLost {
		n.s.lost.Add(1)
	}
	n.stopTimers()
}

// fail reports every live allocation failed; later ones fail on arrival.
func (n *node) fail() {
	if !n.mode.CompareAndSwap(modeOK, modeFailed) {
		return
	}
	n.s.failed.Add(1)
	now := time.Now().UnixNano()
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, a := range n.allocs {
		if !isTerminal(a.status) {
			a.status, a.finishedAt = structs.AllocClientStatusFailed, now
			n.markDirtyLocked(id)
		}
	}
}
