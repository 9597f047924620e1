package server

import (
	"sync"

	"github.com/drover-project/drover/internal/structs"
)

// evalUpdateBatcher writes the evaluation updates workers send (Eval.Update,
// Eval.Create) in as few Raft entries as possible: group commit. While one
// entry is being written, every update that arrives joins the next one;
// with no entry in flight an update is written at once, so a lone worker
// waits no longer than before. Each caller returns only once the entry
// holding its update is applied, so a worker still acks its evaluation
// strictly after the update is committed.
type evalUpdateBatcher struct {
	write    func(evals []*structs.Evaluation) (uint64, error) // one Raft entry
	shutdown <-chan struct{}

	mu      sync.Mutex
	pending *evalBatch
	kick    chan struct{} // one token: a batch is pending
}

type evalBatch struct {
	evals []*structs.Evaluation
	done  chan struct{}
	index uint64
	err   error
}

func newEvalUpdateBatcher(s *Server) *evalUpdateBatcher {
	return &evalUpdateBatcher{shutdown: s.shutdownCh, kick: make(chan struct{}, 1),
		write: func(evals []*structs.Evaluation) (uint64, error) {
			_, idx, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals})
			return idx, err
		}}
}

// Apply writes evals with the others queued now and returns the index of
// the entry, once applied.
func (b *evalUpdateBatcher) Apply(evals []*structs.Evaluation) (uint64, error) {
	b.mu.Lock()
	if b.pending == nil {
		b.pending = &evalBatch{done: make(chan struct{})}
	}
	batch := b.pending
	batch.evals = append(batch.evals, evals...)
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
	select {
	case <-batch.done:
		return batch.index, batch.err
	case <-b.shutdown:
		return 0, structs.ErrNoLeader
	}
}

// run writes the pending batch, one entry at a time, until shutdown.
func (b *evalUpdateBatcher) run() {
	for {
		select {
		case <-b.shutdown:
			return
		case <-b.kick:
		}
		b.mu.Lock()
		batch := b.pending
		b.pending = nil
		b.mu.Unlock()
		if batch == nil {
			continue
		}
		batch.index, batch.err = b.write(batch.evals)
		close(batch.done)
	}
}
