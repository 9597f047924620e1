package client

import (
	"reflect"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Timing of the status sync.
const (
	allocSyncInterval       = 200 * time.Millisecond
	allocSyncNonUrgentEvery = 5 // ticks between non-urgent batches (≈1 s)
	allocSyncBackoffMin     = 500 * time.Millisecond
	allocSyncBackoffMax     = 5 * time.Second
)

// allocSync batches alloc state updates to the servers.
type allocSync struct {
	c *Client

	mu      sync.Mutex
	pending map[string]*structs.Allocation
	urgent  bool
	// acked is the last state the servers acknowledged per alloc.
	acked map[string]*structs.Allocation
}

func newAllocSync(c *Client) *allocSync {
	return &allocSync{c: c, pending: map[string]*structs.Allocation{}, acked: map[string]*structs.Allocation{}}
}

// allocStateUpdated is the alloc runners' callback: keep the newest stripped
// copy; a ClientStatus change, or deployment health the client just decided
// (the deployment waits on it to go on), makes the next batch urgent.
func (s *allocSync) allocStateUpdated(a *structs.Allocation) {
	s.c.allocMu.RLock()
	_, live := s.c.allocs[a.ID]
	s.c.allocMu.RUnlock()
	if !live {
		return // removed by the servers: nothing to tell them
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.pending[a.ID]
	if prev == nil {
		prev = s.acked[a.ID]
	}
	if prev == nil || prev.ClientStatus != a.ClientStatus || healthChanged(prev, a) {
		s.urgent = true
	}
	s.pending[a.ID] = a
}

// resendAll makes every live allocation's current state go out in the next
// batch, urgently, even when the servers acknowledged the same state before.
func (s *allocSync) resendAll() {
	s.mu.Lock()
	s.acked = map[string]*structs.Allocation{}
	s.mu.Unlock()
	s.c.allocMu.RLock()
	runners := make([]interface{ Report() }, 0, len(s.c.allocs))
	for _, ar := range s.c.allocs {
		runners = append(runners, ar)
	}
	s.c.allocMu.RUnlock()
	for _, ar := range runners {
		ar.Report()
	}
}

// reportNotRun queues the final state of an allocation the servers stopped
// before this client ran it: complete, with no task started.
func (s *allocSync) reportNotRun(a *structs.Allocation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending[a.ID] = &structs.Allocation{ID: a.ID, NodeID: a.NodeID, ClientStatus: structs.AllocClientStatusComplete,
		ClientDescription: "Allocation was stopped before it started", NetworkStatus: &structs.AllocNetworkStatus{}}
	s.urgent = true
}

// forget drops all state of a removed allocation.
func (s *allocSync) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, id)
	delete(s.acked, id)
}

// healthChanged reports whether b carries deployment health a did not.
func healthChanged(a, b *structs.Allocation) bool {
	if b.DeploymentStatus == nil || b.DeploymentStatus.Healthy == nil {
		return false
	}
	return a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil ||
		*a.DeploymentStatus.Healthy != *b.DeploymentStatus.Healthy
}

func sameState(a, b *structs.Allocation) bool {
	return b != nil && a.ClientStatus == b.ClientStatus && a.ClientDescription == b.ClientDescription &&
		reflect.DeepEqual(a.TaskStates, b.TaskStates) && reflect.DeepEqual(a.DeploymentStatus, b.DeploymentStatus) &&
		reflect.DeepEqual(a.NetworkStatus, b.NetworkStatus)
}

// run sends batches until shutdown; never before the first alloc pull.
func (s *allocSync) run() {
	c := s.c
	select {
	case <-c.serversContacted:
	case <-c.shutdownCh:
		return
	}
	ticker := time.NewTicker(allocSyncInterval)
	defer ticker.Stop()
	tick := 0
	var notBefore time.Time
	backoff := allocSyncBackoffMin
	for {
		select {
		case <-c.shutdownCh:
			return
		case <-ticker.C:
		}
		tick++
		if time.Now().Before(notBefore) {
			continue
		}
		s.mu.Lock()
		if !s.urgent && tick%allocSyncNonUrgentEvery != 0 || len(s.pending) == 0 {
			s.mu.Unlock()
			continue
		}
		batch := make([]*structs.Allocation, 0, len(s.pending))
		for id, a := range s.pending {
			if sameState(a, s.acked[id]) {
				delete(s.pending, id)
				continue
			}
			batch = append(batch, a)
		}
		s.pending = map[string]*structs.Allocation{}
		s.urgent = false
		s.mu.Unlock()
		if len(batch) == 0 {
			continue
		}

		req := &structs.AllocUpdateRequest{Alloc: batch, UpdatedAt: c.now().UnixNano(),
			WriteRequest: structs.WriteRequest{Region: c.cfg.Region, AuthToken: c.secretID()}}
		var resp structs.GenericResponse
		err, ok := c.rpcUntilShutdown("Node.UpdateAlloc", req, &resp)
		if !ok {
			return
		}
		s.mu.Lock()
		if err != nil {
			// Requeue what was not superseded meanwhile and back off.
			// Sending it again is safe whatever the error, even one
			// whose outcome is unknown ("leadership lost while
			// committing log"): the servers set each allocation's
			// client state by its ID, so an update applied twice
			// leaves what applying it once does
			// (server.TestIdempotentWritesApplyTwiceHarmlessly).
			for _, a := range batch {
				if _, newer := s.pending[a.ID]; !newer {
					s.pending[a.ID] = a
				}
			}
			s.urgent = true
			s.mu.Unlock()
			c.logger.Warn("failed to update allocations", "error", err, "retry_in", backoff)
			notBefore = time.Now().Add(jitter(backoff))
			backoff = min(backoff*2, allocSyncBackoffMax)
			continue
		}
		for _, a := range batch {
			s.acked[a.ID] = a
		}
		s.mu.Unlock()
		backoff = allocSyncBackoffMin
		notBefore = time.Time{}
	}
}
