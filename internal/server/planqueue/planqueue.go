package planqueue

import (
	"container/heap"
	"errors"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// ErrDisabled is returned when the queue is not enabled (this server is not,
// or is no longer, the leader). The worker should retry against the new leader.
var ErrDisabled = errors.New("plan queue is disabled: this server is not the leader")

// PendingPlan is what a worker holds while its plan waits for the applier.
type PendingPlan interface {
	// Wait blocks until the applier responds or the queue is disabled.
	Wait() (*structs.PlanResult, error)
}

// Pending is a queued plan as the applier sees it.
type Pending struct {
	Plan        *structs.Plan
	EnqueueTime time.Time

	seq    uint64
	once   sync.Once
	done   chan struct{}
	result *structs.PlanResult
	err    error
}

// Respond answers the worker. Only the first call has an effect.
func (p *Pending) Respond(result *structs.PlanResult, err error) {
	p.once.Do(func() {
		p.result, p.err = result, err
		close(p.done)
	})
}

// Wait blocks until Respond is called.
func (p *Pending) Wait() (*structs.PlanResult, error) {
	<-p.done
	return p.result, p.err
}

// Stats describes the queue.
type Stats struct {
	Depth int
}

// PlanQueue is a priority queue of plans. The zero value is not usable; use New.
type PlanQueue struct {
	mu      sync.Mutex
	enabled bool
	seq     uint64
	ready   pendingHeap
	// changed is closed (and replaced) whenever a plan is added or the
	// queue is disabled, waking every blocked Dequeue.
	changed chan struct{}
}

// New returns a disabled queue.
func New() *PlanQueue {
	return &PlanQueue{changed: make(chan struct{})}
}

// Enabled reports whether the queue accepts plans.
func (q *PlanQueue) Enabled() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.enabled
}

// SetEnabled turns the queue on or off. Turning it off fails every queued plan
// with ErrDisabled and wakes blocked Dequeue calls.
func (q *PlanQueue) SetEnabled(enabled bool) {
	q.mu.Lock()
	if q.enabled == enabled {
		q.mu.Unlock()
		return
	}
	q.enabled = enabled
	var flushed pendingHeap
	if !enabled {
		flushed = q.ready
		q.ready = nil
		q.broadcastLocked()
	}
	q.mu.Unlock()
	for _, p := range flushed {
		p.Respond(nil, ErrDisabled)
	}
}

// Enqueue adds a plan and returns the handle the worker waits on.
func (q *PlanQueue) Enqueue(plan *structs.Plan) (PendingPlan, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.enabled {
		return nil, ErrDisabled
	}
	q.seq++
	p := &Pending{Plan: plan, EnqueueTime: time.Now(), seq: q.seq, done: make(chan struct{})}
	heap.Push(&q.ready, p)
	q.broadcastLocked()
	return p, nil
}

// Dequeue returns the highest-priority plan, blocking up to timeout (forever
// if timeout <= 0). It returns (nil, nil) on timeout and ErrDisabled if the
// queue is or becomes disabled.
func (q *PlanQueue) Dequeue(timeout time.Duration) (*Pending, error) {
	var timeoutCh <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timeoutCh = t.C
	}
	for {
		q.mu.Lock()
		if !q.enabled {
			q.mu.Unlock()
			return nil, ErrDisabled
		}
		if q.ready.Len() > 0 {
			p := heap.Pop(&q.ready).(*Pending)
			q.mu.Unlock()
			return p, nil
		}
		changed := q.changed
		q.mu.Unlock()
		select {
		case <-changed:
		case <-timeoutCh:
			return nil, nil
		}
	}
}

// TryDequeue returns the highest-priority plan without waiting: (nil, nil)
// when the queue is empty, ErrDisabled when it is disabled.
func (q *PlanQueue) TryDequeue() (*Pending, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.enabled {
		return nil, ErrDisabled
	}
	if q.ready.Len() == 0 {
		return nil, nil
	}
	return heap.Pop(&q.ready).(*Pending), nil
}

// Stats returns the queue depth.
func (q *PlanQueue) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return Stats{Depth: q.ready.Len()}
}

func (q *PlanQueue) broadcastLocked() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// pendingHeap orders plans by priority (higher first), then arrival.
type pendingHeap []*Pending

func (h pendingHeap) Len() int { return len(h) }
func (h pendingHeap) Less(i, j int) bool {
	if h[i].Plan.Priority != h[j].Plan.Priority {
		return h[i].Plan.Priority > h[j].Plan.Priority
	}
	return h[i].seq < h[j].seq
}
func (h pendingHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pendingHeap) Push(x any)   { *h = append(*h, x.(*Pending)) }
func (h *pendingHeap) Pop() any {
	old := *h
	n := len(old)
	p := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return p
}
