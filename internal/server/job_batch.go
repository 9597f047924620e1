package server

import (
	"fmt"
	"sync"

	"github.com/drover-project/drover/internal/fsm"
	"github.com/drover-project/drover/internal/structs"
)

// jobRegisterBatcher writes concurrent job registrations (Job.Register
// requests validated on their own) in as few Raft entries as possible:
// while one entry is being written, every registration that arrives joins
// the next. With no entry in flight a registration is written at once, alone
// and in the plain JobRegisterRequestType entry. Each caller gets the
// outcome of its own registration and the entry's index (its
// JobModifyIndex and EvalCreateIndex), once the entry is applied.
// Registrations of one job keep their order: a caller is answered only
// after its entry is applied, and within an entry the FSM applies them in
// arrival order.
type jobRegisterBatcher struct {
	// write submits one entry and returns its index and, per request, the
	// FSM's outcome (nil: applied).
	write    func(reqs []*structs.JobRegisterRequest) (uint64, []error, error)
	shutdown <-chan struct{}

	mu      sync.Mutex
	pending []*jobBatch // oldest first; only the last one is joined
	kick    chan struct{}
}

type jobBatch struct {
	reqs  []*structs.JobRegisterRequest
	done  chan struct{}
	index uint64
	errs  []error // per request
	err   error   // the whole entry
}

// maxJobBatch bounds the registrations in one entry.
const maxJobBatch = 256

func newJobRegisterBatcher(s *Server) *jobRegisterBatcher {
	return &jobRegisterBatcher{shutdown: s.shutdownCh, kick: make(chan struct{}, 1),
		write: func(reqs []*structs.JobRegisterRequest) (uint64, []error, error) {
			if len(reqs) == 1 {
				_, idx, err := s.raftApply(structs.JobRegisterRequestType, reqs[0])
				if err != nil && idx != 0 {
					// Applied, and the FSM refused it.
					return idx, []error{err}, nil
				}
				return idx, []error{nil}, err
			}
			resp, idx, err := s.raftApply(structs.JobRegisterBatchRequestType, &structs.JobRegisterBatchRequest{Jobs: reqs})
			if err != nil {
				return idx, nil, err
			}
			res, ok := resp.(*fsm.JobRegisterBatchResult)
			if !ok || len(res.Errors) != len(reqs) {
				return idx, nil, fmt.Errorf("job register batch: unexpected FSM response %T", resp)
			}
			return idx, res.Errors, nil
		}}
}

// Apply registers req with the others queued now and returns the index of
// the entry, once applied.
func (b *jobRegisterBatcher) Apply(req *structs.JobRegisterRequest) (uint64, error) {
	b.mu.Lock()
	n := len(b.pending)
	if n == 0 || len(b.pending[n-1].reqs) >= maxJobBatch {
		b.pending = append(b.pending, &jobBatch{done: make(chan struct{})})
		n++
	}
	batch := b.pending[n-1]
	i := len(batch.reqs)
	batch.reqs = append(batch.reqs, req)
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
	select {
	case <-batch.done:
	case <-b.shutdown:
		return 0, b.abandoned(batch)
	}
	if batch.err != nil {
		return batch.index, batch.err
	}
	return batch.index, batch.errs[i]
}

// abandoned is the answer of a caller the server's shutdown stopped waiting
// for batch: ErrNoLeader when the batch was never handed to Raft (safe to
// send again), otherwise the outcome is unknown.
func (b *jobRegisterBatcher) abandoned(batch *jobBatch) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.pending {
		if p == batch {
			return structs.ErrNoLeader
		}
	}
	return structs.NewErrOutcomeUnknown("server shut down while committing log")
}

// run writes the pending batch, one entry at a time, until shutdown.
func (b *jobRegisterBatcher) run() {
	for {
		select {
		case <-b.shutdown:
			return
		case <-b.kick:
		}
		for {
			b.mu.Lock()
			if len(b.pending) == 0 {
				b.mu.Unlock()
				break
			}
			batch := b.pending[0]
			b.pending = b.pending[1:]
			b.mu.Unlock()
			batch.index, batch.errs, batch.err = b.write(batch.reqs)
			close(batch.done)
		}
	}
}
