package server

import (
	"sync"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// allocUpdateBatcher coalesces client alloc updates from every caller into
// one Raft entry per window; each caller waits for the shared result.
type allocUpdateBatcher struct {
	srv    *Server
	window time.Duration

	mu      sync.Mutex
	pending *allocBatch
	stopCh  chan struct{}
	kick    chan struct{}
	wg      sync.WaitGroup
}

type allocBatch struct {
	allocs map[string]*structs.Allocation
	evals  map[structs.NamespacedID]*structs.Evaluation
	done   chan struct{}
	index  uint64
	err    error
}

func newAllocUpdateBatcher(srv *Server, window time.Duration) *allocUpdateBatcher {
	return &allocUpdateBatcher{srv: srv, window: window, stopCh: make(chan struct{}), kick: make(chan struct{}, 1)}
}

func (b *allocUpdateBatcher) start() {
	b.wg.Add(1)
	go b.loop()
}

func (b *allocUpdateBatcher) stop() {
	select {
	case <-b.stopCh:
	default:
		close(b.stopCh)
	}
	b.wg.Wait()
}

// add queues updates and waits until they are committed.
func (b *allocUpdateBatcher) add(allocs []*structs.Allocation, evals []*structs.Evaluation) (uint64, error) {
	b.mu.Lock()
	if b.pending == nil {
		b.pending = &allocBatch{allocs: map[string]*structs.Allocation{},
			evals: map[structs.NamespacedID]*structs.Evaluation{}, done: make(chan struct{})}
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
	batch := b.pending
	for _, a := range allocs {
		batch.allocs[a.ID] = a // latest update per alloc wins
	}
	for _, e := range evals {
		key := structs.NamespacedID{Namespace: e.Namespace, ID: e.JobID}
		if _, ok := batch.evals[key]; !ok {
			batch.evals[key] = e
		}
	}
	b.mu.Unlock()
	select {
	case <-batch.done:
		return batch.index, batch.err
	case <-b.stopCh:
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.pending == batch {
			return 0, structs.ErrNoLeader // never handed to Raft
		}
		// Handed to Raft: the client's own retry is safe all the same
		// (an alloc's client status is set by its ID, so a second apply
		// changes nothing), but the outcome is not known here.
		return 0, structs.NewErrOutcomeUnknown("leadership lost while committing log")
	}
}

func (b *allocUpdateBatcher) loop() {
	defer b.wg.Done()
	for {
		select {
		case <-b.stopCh:
			return
		case <-b.kick:
		}
		select {
		case <-b.stopCh:
			return
		case <-time.After(b.window):
		}
		b.mu.Lock()
		batch := b.pending
		b.pending = nil
		b.mu.Unlock()
		if batch == nil {
			continue
		}
		req := &structs.AllocUpdateRequest{UpdatedAt: time.Now().UnixNano()}
		for _, a := range batch.allocs {
			req.Alloc = append(req.Alloc, a)
		}
		for _, e := range batch.evals {
			req.Evals = append(req.Evals, e)
		}
		_, batch.index, batch.err = b.srv.raftApply(structs.AllocClientUpdateRequestType, req)
		close(batch.done)
	}
}
