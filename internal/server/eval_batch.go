package server

import (
	"sync"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// evalUpdateBatcher writes the evaluation updates workers send (Eval.Update,
// Eval.Create) in as few Raft entries as possible: group commit. While one
// entry is being written, every update that arrives joins the next one;
// with no entry in flight an update is written at once, so a lone worker
// waits no longer than before. Each caller returns only once the entry
// holding its update is applied, so a worker still acks its evaluation
// strictly after the update is committed.
//
// Terminal status updates are workers' background completions (nobody is
// blocked on them but the eval's ack): they may wait up to linger for the
// plan applier, which takes whatever is pending into its next entry (take),
// so an evaluation's completion usually costs no entry of its own.
type evalUpdateBatcher struct {
	write    func(evals []*structs.Evaluation) (uint64, error) // one Raft entry
	shutdown <-chan struct{}
	linger   time.Duration

	mu      sync.Mutex
	pending *evalBatch
	kick    chan struct{} // one token: a batch is pending
}

type evalBatch struct {
	evals  []*structs.Evaluation
	urgent bool      // someone is waiting: write at once
	since  time.Time // first update queued
	done   chan struct{}
	index  uint64
	err    error
}

// finish records the outcome of the entry holding the batch and releases
// its callers.
func (b *evalBatch) finish(index uint64, err error) {
	b.index, b.err = index, err
	close(b.done)
}

// completionLinger is how long a background completion may wait for a plan
// entry to ride in before it is written on its own.
const completionLinger = 5 * time.Millisecond

func newEvalUpdateBatcher(s *Server) *evalUpdateBatcher {
	return &evalUpdateBatcher{shutdown: s.shutdownCh, kick: make(chan struct{}, 1), linger: completionLinger,
		write: func(evals []*structs.Evaluation) (uint64, error) {
			_, idx, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals})
			return idx, err
		}}
}

// Apply writes evals with the others queued now and returns the index of
// the entry, once applied.
func (b *evalUpdateBatcher) Apply(evals []*structs.Evaluation) (uint64, error) {
	urgent := false
	for _, e := range evals {
		if !e.TerminalStatus() {
			urgent = true
		}
	}
	b.mu.Lock()
	if b.pending == nil {
		b.pending = &evalBatch{done: make(chan struct{}), since: time.Now()}
	}
	batch := b.pending
	batch.evals = append(batch.evals, evals...)
	batch.urgent = batch.urgent || urgent
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
	select {
	case <-batch.done:
		return batch.index, batch.err
	case <-b.shutdown:
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.pending == batch {
			return 0, structs.ErrNoLeader // never handed to Raft
		}
		return 0, structs.NewErrOutcomeUnknown("server shut down while committing log")
	}
}

// take hands the pending updates to the caller, which writes them in its
// own entry and must finish the batch.
func (b *evalUpdateBatcher) take() *evalBatch {
	b.mu.Lock()
	defer b.mu.Unlock()
	batch := b.pending
	b.pending = nil
	return batch
}

// run writes the pending batch, one entry at a time, until shutdown.
func (b *evalUpdateBatcher) run() {
	var timer *time.Timer
	var timerC <-chan time.Time
	for {
		select {
		case <-b.shutdown:
			return
		case <-b.kick:
		case <-timerC:
			timerC = nil
		}
		b.mu.Lock()
		batch := b.pending
		if batch != nil && !batch.urgent {
			if wait := b.linger - time.Since(batch.since); wait > 0 {
				b.mu.Unlock()
				if timerC == nil {
					if timer == nil {
						timer = time.NewTimer(wait)
					} else {
						timer.Reset(wait)
					}
					timerC = timer.C
				}
				continue
			}
		}
		b.pending = nil
		b.mu.Unlock()
		if batch == nil {
			continue
		}
		batch.finish(b.write(batch.evals))
	}
}
