package blockedevals

import (
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/structs"
)

// Enqueuer receives released evals with the token they were blocked with
// (Reblock) or "" (Block). The eval broker implements it.
type Enqueuer interface {
	EnqueueAll(map[*structs.Evaluation]string)
}

// Stats describes the tracked evals.
type Stats struct {
	TotalBlocked    int // captured + escaped
	TotalCaptured   int
	TotalEscaped    int
	TotalDuplicates int // reported by Duplicates but not yet taken
	TotalReleasing  int // released but not yet handed to the broker
}

type jobKey struct{ namespace, jobID string }

type wrapped struct {
	eval  *structs.Evaluation
	token string
}

// BlockedEvals tracks blocked evals. The zero value is not usable; use New.
type BlockedEvals struct {
	broker Enqueuer
	logger hclog.Logger
	// dupNotify is signalled (never closed) when duplicates are added; it
	// lives as long as the BlockedEvals so a reaper can hold it across terms.
	dupNotify chan struct{}

	mu             sync.Mutex
	enabled        bool
	captured       map[string]wrapped
	escaped        map[string]wrapped
	jobs           map[jobKey]string
	unblockIndexes map[string]uint64
	duplicates     []*structs.Evaluation
	outbox         map[*structs.Evaluation]string
	outboxNotify   chan struct{}
	stopCh         chan struct{}
}

// New returns a disabled BlockedEvals that releases evals to broker.
func New(broker Enqueuer, logger hclog.Logger) *BlockedEvals {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	b := &BlockedEvals{broker: broker, logger: logger.Named("blocked_evals"), dupNotify: make(chan struct{}, 1)}
	b.resetLocked()
	return b
}

func (b *BlockedEvals) resetLocked() {
	b.captured = make(map[string]wrapped)
	b.escaped = make(map[string]wrapped)
	b.jobs = make(map[jobKey]string)
	b.unblockIndexes = make(map[string]uint64)
	b.duplicates = nil
	b.outbox = make(map[*structs.Evaluation]string)
	b.outboxNotify = make(chan struct{}, 1)
}

// Enabled reports whether evals are tracked.
func (b *BlockedEvals) Enabled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.enabled
}

// SetEnabled turns tracking on (empty) or off (everything dropped).
func (b *BlockedEvals) SetEnabled(enabled bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.enabled == enabled {
		return
	}
	b.enabled = enabled
	if enabled {
		b.resetLocked()
		b.stopCh = make(chan struct{})
		go b.run(b.stopCh, b.outboxNotify)
		return
	}
	close(b.stopCh)
	b.stopCh = nil
	b.resetLocked()
}

// Block tracks an eval the scheduler marked blocked.
func (b *BlockedEvals) Block(e *structs.Evaluation) { b.block(e, "") }

// Reblock tracks an eval that was unblocked, dequeued with token, and
// blocked again by the scheduler; when released it is handed to the broker
// with token so the broker can requeue it if that delivery is still
// outstanding.
func (b *BlockedEvals) Reblock(e *structs.Evaluation, token string) { b.block(e, token) }

func (b *BlockedEvals) block(e *structs.Evaluation, token string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return
	}
	// Already tracked (the FSM and a Reblock both report the same eval):
	// keep the delivery token if this call carries one.
	if w, ok := b.captured[e.ID]; ok {
		if token != "" {
			w.token = token
			b.captured[e.ID] = w
		}
		return
	}
	if w, ok := b.escaped[e.ID]; ok {
		if token != "" {
			w.token = token
			b.escaped[e.ID] = w
		}
		return
	}
	k := jobKey{e.Namespace, e.JobID}
	if id, ok := b.jobs[k]; ok {
		old, inCaptured := b.captured[id]
		if !inCaptured {
			old = b.escaped[id]
		}
		if old.eval.CreateIndex > e.CreateIndex {
			b.addDuplicateLocked(e) // the tracked one is newer
			return
		}
		delete(b.captured, id)
		delete(b.escaped, id)
		delete(b.jobs, k)
		b.addDuplicateLocked(old.eval)
	}
	if b.missedUnblockLocked(e) {
		b.releaseLocked(wrapped{eval: e, token: token})
		return
	}
	b.jobs[k] = e.ID
	if e.EscapedComputedClass {
		b.escaped[e.ID] = wrapped{eval: e, token: token}
	} else {
		b.captured[e.ID] = wrapped{eval: e, token: token}
	}
}

// missedUnblockLocked reports whether an unblock that could help e happened
// after the snapshot e was scheduled from.
func (b *BlockedEvals) missedUnblockLocked(e *structs.Evaluation) bool {
	var latest uint64
	for class, index := range b.unblockIndexes {
		if index > latest {
			latest = index
		}
		if index <= e.SnapshotIndex {
			continue
		}
		if elig, known := e.ClassEligibility[class]; !known || elig {
			return true
		}
	}
	return e.EscapedComputedClass && latest > e.SnapshotIndex
}

func (b *BlockedEvals) addDuplicateLocked(e *structs.Evaluation) {
	b.duplicates = append(b.duplicates, e)
	select {
	case b.dupNotify <- struct{}{}:
	default:
	}
}

// releaseLocked queues w for the broker and pokes the delivery goroutine.
func (b *BlockedEvals) releaseLocked(w wrapped) {
	b.outbox[w.eval] = w.token
	select {
	case b.outboxNotify <- struct{}{}:
	default:
	}
}

func (b *BlockedEvals) untrackLocked(id string, w wrapped) {
	delete(b.captured, id)
	delete(b.escaped, id)
	k := jobKey{w.eval.Namespace, w.eval.JobID}
	if b.jobs[k] == id {
		delete(b.jobs, k)
	}
}

// Unblock records that capacity of computed class changed at Raft index
// index and releases every eval for which that class was eligible or
// unknown, and every escaped eval.
func (b *BlockedEvals) Unblock(class string, index uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return
	}
	if index > b.unblockIndexes[class] {
		b.unblockIndexes[class] = index
	}
	for id, w := range b.captured {
		if elig, known := w.eval.ClassEligibility[class]; !known || elig {
			b.untrackLocked(id, w)
			b.releaseLocked(w)
		}
	}
	for id, w := range b.escaped {
		b.untrackLocked(id, w)
		b.releaseLocked(w)
	}
}

// UnblockFailed releases evals blocked because their plans kept conflicting
// (TriggeredBy max-plan-attempts) rather than for lack of capacity.
func (b *BlockedEvals) UnblockFailed() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return
	}
	for _, set := range []map[string]wrapped{b.captured, b.escaped} {
		for id, w := range set {
			if w.eval.TriggeredBy == structs.EvalTriggerMaxPlans {
				b.untrackLocked(id, w)
				b.releaseLocked(w)
			}
		}
	}
}

// Untrack forgets the blocked eval of a job, if any.
func (b *BlockedEvals) Untrack(namespace, jobID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := jobKey{namespace, jobID}
	id, ok := b.jobs[k]
	if !ok {
		return
	}
	delete(b.jobs, k)
	delete(b.captured, id)
	delete(b.escaped, id)
}

// Duplicates returns and forgets the evals replaced by a newer blocked eval of
// the same job; the leader cancels them through Raft.
func (b *BlockedEvals) Duplicates() []*structs.Evaluation {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.duplicates
	b.duplicates = nil
	return d
}

// DuplicatesNotify is signalled when Duplicates has something to return.
func (b *BlockedEvals) DuplicatesNotify() <-chan struct{} { return b.dupNotify }

// Stats returns counts.
func (b *BlockedEvals) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Stats{
		TotalBlocked:    len(b.captured) + len(b.escaped),
		TotalCaptured:   len(b.captured),
		TotalEscaped:    len(b.escaped),
		TotalDuplicates: len(b.duplicates),
		TotalReleasing:  len(b.outbox),
	}
}

// run hands released evals to the broker outside the lock.
func (b *BlockedEvals) run(stop, notify chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-notify:
		}
		b.mu.Lock()
		if b.stopCh != stop {
			b.mu.Unlock()
			return
		}
		batch := b.outbox
		b.outbox = make(map[*structs.Evaluation]string)
		b.mu.Unlock()
		if len(batch) > 0 {
			b.broker.EnqueueAll(batch)
		}
	}
}
