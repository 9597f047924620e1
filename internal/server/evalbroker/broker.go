package evalbroker

import (
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/server/clock"
	"github.com/drover-project/drover/internal/structs"
)

// FailedQueue is the pseudo scheduler type that holds evals which reached the
// delivery limit. The leader drains it with DequeueFailed, marks each eval
// failed through Raft, then acks it.
const FailedQueue = "_failed"

var (
	// ErrDisabled is returned when the broker is not enabled (this server is
	// not, or no longer, the leader).
	ErrDisabled = errors.New("eval broker is disabled: this server is not the leader")
	// ErrNotOutstanding is returned for an eval that is not dequeued: it was
	// never dequeued, was already acked or nacked, or its nack timeout fired.
	ErrNotOutstanding = errors.New("evaluation is not outstanding")
	// ErrTokenMismatch is returned when the token is not the one of the
	// current delivery (a stale worker).
	ErrTokenMismatch = errors.New("evaluation token does not match the outstanding delivery")
)

// Config tunes the broker. Zero fields take the defaults of DefaultConfig.
type Config struct {
	NackTimeout         time.Duration // 60s
	InitialNackDelay    time.Duration // 1s
	SubsequentNackDelay time.Duration // 20s
	DeliveryLimit       int           // 3
	Logger              hclog.Logger
	Clock               clock.Clock
}

// DefaultConfig returns Nomad's defaults.
func DefaultConfig() Config {
	return Config{
		NackTimeout:         60 * time.Second,
		InitialNackDelay:    time.Second,
		SubsequentNackDelay: 20 * time.Second,
		DeliveryLimit:       3,
		Logger:              hclog.NewNullLogger(),
		Clock:               clock.Real{},
	}
}

// Stats describes the broker's queues.
type Stats struct {
	TotalReady      int // ready in scheduler queues (FailedQueue excluded)
	TotalUnacked    int // dequeued, not yet acked or nacked
	TotalPending    int // waiting behind another eval of the same job
	TotalWaiting    int // held by Wait, WaitUntil or a nack delay
	TotalFailed     int // ready in FailedQueue
	TotalCancelable int // obsolete, waiting for Cancelable
	ByScheduler     map[string]SchedulerStats
}

// SchedulerStats are per scheduler type (FailedQueue included).
type SchedulerStats struct {
	Ready   int
	Unacked int
}

type jobKey struct{ namespace, jobID string }

func keyOf(e *structs.Evaluation) jobKey { return jobKey{e.Namespace, e.JobID} }

// unacked is one delivery. timer is nil while the nack timeout is paused;
// gen invalidates timers that fired but lost the race for the lock.
type unacked struct {
	eval  *structs.Evaluation
	token string
	timer clock.Timer
	gen   uint64
}

type waiting struct {
	eval  *structs.Evaluation
	timer clock.Timer
}

// Broker is the eval broker. The zero value is not usable; use New.
type Broker struct {
	cfg    Config
	logger hclog.Logger
	clock  clock.Clock

	enableMu sync.Mutex // serialises SetEnabled
	wg       sync.WaitGroup

	mu          sync.Mutex
	enabled     bool
	seq         uint64
	evals       map[string]int // known evals → deliveries so far (dedupe)
	jobEvals    map[jobKey]string
	pending     map[jobKey]*evalHeap
	ready       map[string]*evalHeap
	unack       map[string]*unacked
	requeue     map[string]*structs.Evaluation // token → eval
	timeWait    map[string]*waiting
	delayed     *evalHeap
	cancelable  []*structs.Evaluation
	changed     chan struct{} // closed and replaced to wake Dequeue
	delayUpdate chan struct{} // pokes the delay goroutine
	stopCh      chan struct{}
}

// New returns a disabled broker.
func New(cfg Config) *Broker {
	def := DefaultConfig()
	if cfg.NackTimeout <= 0 {
		cfg.NackTimeout = def.NackTimeout
	}
	if cfg.InitialNackDelay < 0 {
		cfg.InitialNackDelay = 0
	}
	if cfg.SubsequentNackDelay < 0 {
		cfg.SubsequentNackDelay = 0
	}
	if cfg.DeliveryLimit <= 0 {
		cfg.DeliveryLimit = def.DeliveryLimit
	}
	if cfg.Logger == nil {
		cfg.Logger = def.Logger
	}
	if cfg.Clock == nil {
		cfg.Clock = def.Clock
	}
	b := &Broker{cfg: cfg, logger: cfg.Logger.Named("eval_broker"), clock: cfg.Clock, changed: make(chan struct{})}
	b.resetLocked()
	return b
}

func (b *Broker) resetLocked() {
	b.evals = make(map[string]int)
	b.jobEvals = make(map[jobKey]string)
	b.pending = make(map[jobKey]*evalHeap)
	b.ready = make(map[string]*evalHeap)
	b.unack = make(map[string]*unacked)
	b.requeue = make(map[string]*structs.Evaluation)
	b.timeWait = make(map[string]*waiting)
	b.delayed = &evalHeap{less: delayLess}
	b.cancelable = nil
	b.delayUpdate = make(chan struct{}, 1)
}

// Enabled reports whether the broker is enabled.
func (b *Broker) Enabled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.enabled
}

// SetEnabled turns the broker on (empty) or off. Turning it off drops every
// eval, stops every timer and the delay goroutine, and wakes blocked Dequeue
// calls with ErrDisabled. It never waits on anything but the broker's own
// goroutine, which only ever holds the broker's lock briefly.
func (b *Broker) SetEnabled(enabled bool) {
	b.enableMu.Lock()
	defer b.enableMu.Unlock()
	b.mu.Lock()
	if b.enabled == enabled {
		b.mu.Unlock()
		return
	}
	b.enabled = enabled
	if enabled {
		b.resetLocked()
		b.stopCh = make(chan struct{})
		b.wg.Add(1)
		go b.runDelayed(b.stopCh, b.delayUpdate)
		b.mu.Unlock()
		return
	}
	for _, u := range b.unack {
		if u.timer != nil {
			u.timer.Stop()
		}
	}
	for _, w := range b.timeWait {
		w.timer.Stop()
	}
	close(b.stopCh)
	b.stopCh = nil
	b.resetLocked()
	b.broadcastLocked()
	b.mu.Unlock()
	b.wg.Wait()
}

// Enqueue adds an eval. Duplicates (by ID) are ignored, as are all evals while
// the broker is disabled (the next leader restores them from state).
func (b *Broker) Enqueue(e *structs.Evaluation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.enabled {
		b.processEnqueueLocked(e, "")
	}
}

// EnqueueAll adds evals with the token they were dequeued with (or ""). An
// eval that is still outstanding with that token is held and enqueued again
// when that delivery is acked (dropped if it is nacked).
func (b *Broker) EnqueueAll(evals map[*structs.Evaluation]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled {
		return
	}
	for e, token := range evals {
		b.processEnqueueLocked(e, token)
	}
}

func (b *Broker) processEnqueueLocked(e *structs.Evaluation, token string) {
	if _, known := b.evals[e.ID]; known {
		if token == "" {
			return
		}
		if u, ok := b.unack[e.ID]; ok && u.token == token {
			b.requeue[token] = e
		}
		return
	}
	b.evals[e.ID] = 0
	now := b.clock.Now()
	switch {
	case e.Wait > 0:
		b.waitLocked(e, e.Wait)
	case e.WaitUntil.After(now):
		b.seq++
		b.delayed.push(item{eval: e, seq: b.seq})
		select {
		case b.delayUpdate <- struct{}{}:
		default:
		}
	default:
		b.enqueueLocked(e, e.Type)
	}
}

// waitLocked holds e for d, then makes it ready.
func (b *Broker) waitLocked(e *structs.Evaluation, d time.Duration) {
	w := &waiting{eval: e}
	w.timer = b.clock.AfterFunc(d, func() { b.releaseWaiting(w) })
	b.timeWait[e.ID] = w
}

func (b *Broker) releaseWaiting(w *waiting) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled || b.timeWait[w.eval.ID] != w {
		return // dropped, or the broker was reset
	}
	delete(b.timeWait, w.eval.ID)
	b.enqueueLocked(w.eval, w.eval.Type)
}

// enqueueLocked makes e ready in queue, or pending if another eval of its job
// is ready or outstanding. Failed evals keep their job slot until acked.
func (b *Broker) enqueueLocked(e *structs.Evaluation, queue string) {
	b.seq++
	it := item{eval: e, seq: b.seq}
	if queue != FailedQueue {
		k := keyOf(e)
		owner, ok := b.jobEvals[k]
		if !ok {
			b.jobEvals[k] = e.ID
		} else if owner != e.ID {
			h := b.pending[k]
			if h == nil {
				h = &evalHeap{less: pendingLess}
				b.pending[k] = h
			}
			h.push(it)
			return
		}
	}
	h := b.ready[queue]
	if h == nil {
		h = &evalHeap{less: readyLess}
		b.ready[queue] = h
	}
	h.push(it)
	b.broadcastLocked()
}

func (b *Broker) broadcastLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// Dequeue returns the best ready eval among the given scheduler types and its
// delivery token, blocking up to timeout (forever if timeout <= 0). It returns
// (nil, "", nil) on timeout and ErrDisabled if the broker is or becomes
// disabled.
func (b *Broker) Dequeue(schedulers []string, timeout time.Duration) (*structs.Evaluation, string, error) {
	var timeoutCh chan struct{}
	if timeout > 0 {
		ch := make(chan struct{})
		t := b.clock.AfterFunc(timeout, func() { close(ch) })
		defer t.Stop()
		timeoutCh = ch
	}
	for {
		b.mu.Lock()
		if !b.enabled {
			b.mu.Unlock()
			return nil, "", ErrDisabled
		}
		if e, token, ok := b.dequeueLocked(schedulers); ok {
			b.mu.Unlock()
			return e, token, nil
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-timeoutCh:
			return nil, "", nil
		}
	}
}

// DequeueFailed dequeues from FailedQueue; see Dequeue.
func (b *Broker) DequeueFailed(timeout time.Duration) (*structs.Evaluation, string, error) {
	return b.Dequeue([]string{FailedQueue}, timeout)
}

func (b *Broker) dequeueLocked(schedulers []string) (*structs.Evaluation, string, bool) {
	var best *evalHeap
	for _, s := range schedulers {
		h := b.ready[s]
		if h == nil || h.Len() == 0 {
			continue
		}
		if best == nil || readyLess(h.peek(), best.peek()) {
			best = h
		}
	}
	if best == nil {
		return nil, "", false
	}
	e := best.pop().eval
	u := &unacked{eval: e, token: uuid.NewString()}
	b.armNackLocked(u)
	b.unack[e.ID] = u
	b.evals[e.ID]++
	return e, u.token, true
}

func (b *Broker) armNackLocked(u *unacked) {
	u.gen++
	gen := u.gen
	u.timer = b.clock.AfterFunc(b.cfg.NackTimeout, func() { b.nackTimeout(u, gen) })
}

func (b *Broker) stopNackLocked(u *unacked) {
	if u.timer != nil {
		u.timer.Stop()
		u.timer = nil
	}
	u.gen++
}

// nackTimeout is the nack timer firing: the worker went silent.
func (b *Broker) nackTimeout(u *unacked, gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.enabled || b.unack[u.eval.ID] != u || u.gen != gen || u.timer == nil {
		return // acked, nacked, reset, paused, or broker reset meanwhile
	}
	b.logger.Warn("nack timeout reached; re-enqueueing evaluation", "eval_id", u.eval.ID, "timeout", b.cfg.NackTimeout)
	b.nackLocked(u)
}

// outstandingLocked finds the delivery of evalID with token.
func (b *Broker) outstandingLocked(evalID, token string) (*unacked, error) {
	if !b.enabled {
		return nil, ErrDisabled
	}
	u, ok := b.unack[evalID]
	if !ok {
		return nil, ErrNotOutstanding
	}
	if u.token != token {
		return nil, ErrTokenMismatch
	}
	return u, nil
}

// Ack completes a delivery: the eval leaves the broker, the best pending eval
// of its job becomes ready, the other pending ones become cancelable, and an
// eval re-submitted with this token (EnqueueAll) is enqueued again.
func (b *Broker) Ack(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, err := b.outstandingLocked(evalID, token)
	if err != nil {
		return err
	}
	b.stopNackLocked(u)
	delete(b.unack, evalID)
	delete(b.evals, evalID)
	b.releaseJobLocked(keyOf(u.eval), evalID)
	if e, ok := b.requeue[token]; ok {
		delete(b.requeue, token)
		b.processEnqueueLocked(e, "")
	}
	return nil
}

// releaseJobLocked frees the job slot held by evalID and promotes the best
// pending eval; the rest are obsolete and become cancelable.
func (b *Broker) releaseJobLocked(k jobKey, evalID string) {
	if b.jobEvals[k] != evalID {
		return
	}
	delete(b.jobEvals, k)
	h := b.pending[k]
	if h == nil {
		return
	}
	delete(b.pending, k)
	next := h.pop().eval
	for h.Len() > 0 {
		c := h.pop().eval
		delete(b.evals, c.ID)
		b.cancelable = append(b.cancelable, c)
	}
	b.enqueueLocked(next, next.Type)
}

// Nack gives a delivery back: the eval is enqueued again after a delay that
// grows with its deliveries, or goes to FailedQueue once it has been
// delivered DeliveryLimit times.
func (b *Broker) Nack(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, err := b.outstandingLocked(evalID, token)
	if err != nil {
		return err
	}
	b.nackLocked(u)
	return nil
}

func (b *Broker) nackLocked(u *unacked) {
	b.stopNackLocked(u)
	e := u.eval
	delete(b.unack, e.ID)
	delete(b.requeue, u.token)
	deliveries := b.evals[e.ID]
	if deliveries >= b.cfg.DeliveryLimit {
		b.enqueueLocked(e, FailedQueue)
		return
	}
	if d := b.nackDelay(deliveries); d > 0 {
		b.waitLocked(e, d)
		return
	}
	b.enqueueLocked(e, e.Type)
}

// nackDelay is the re-enqueue delay after the given number of deliveries:
// none before any delivery, InitialNackDelay after the first, then
// (n-1)*SubsequentNackDelay.
func (b *Broker) nackDelay(deliveries int) time.Duration {
	switch {
	case deliveries <= 0:
		return 0
	case deliveries == 1:
		return b.cfg.InitialNackDelay
	default:
		return time.Duration(deliveries-1) * b.cfg.SubsequentNackDelay
	}
}

// OutstandingReset restarts the nack timeout of a delivery (the worker is
// making progress). A paused timeout stays paused.
func (b *Broker) OutstandingReset(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, err := b.outstandingLocked(evalID, token)
	if err != nil {
		return err
	}
	if u.timer == nil {
		return nil
	}
	b.stopNackLocked(u)
	b.armNackLocked(u)
	return nil
}

// PauseNackTimeout stops the nack timeout while the eval's plan waits in the
// plan queue (the worker is blocked on the leader, not silent).
func (b *Broker) PauseNackTimeout(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, err := b.outstandingLocked(evalID, token)
	if err != nil {
		return err
	}
	b.stopNackLocked(u)
	return nil
}

// ResumeNackTimeout restarts a paused nack timeout with a full NackTimeout.
func (b *Broker) ResumeNackTimeout(evalID, token string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, err := b.outstandingLocked(evalID, token)
	if err != nil {
		return err
	}
	if u.timer == nil {
		b.armNackLocked(u)
	}
	return nil
}

// Outstanding returns the token of evalID's current delivery.
func (b *Broker) Outstanding(evalID string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	u, ok := b.unack[evalID]
	if !ok {
		return "", false
	}
	return u.token, true
}

// DropWaiting forgets an eval that is held by a Wait, WaitUntil or nack delay
// (for example because it was deleted). If it held its job's slot, the next
// pending eval of the job is promoted.
func (b *Broker) DropWaiting(evalID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var e *structs.Evaluation
	if w, ok := b.timeWait[evalID]; ok {
		w.timer.Stop()
		delete(b.timeWait, evalID)
		e = w.eval
	} else {
		for _, it := range b.delayed.items {
			if it.eval.ID == evalID {
				e = it.eval
				break
			}
		}
		if e == nil {
			return
		}
		b.delayed.remove(evalID)
	}
	delete(b.evals, evalID)
	b.releaseJobLocked(keyOf(e), evalID)
}

// Cancelable returns and forgets up to batchSize obsolete evals (all of them
// if batchSize <= 0) for the leader to mark canceled through Raft.
func (b *Broker) Cancelable(batchSize int) []*structs.Evaluation {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.cancelable)
	if batchSize > 0 && batchSize < n {
		n = batchSize
	}
	out := make([]*structs.Evaluation, n)
	copy(out, b.cancelable[:n])
	b.cancelable = b.cancelable[n:]
	if len(b.cancelable) == 0 {
		b.cancelable = nil
	}
	return out
}

// DueWaiting is how many evals held for their WaitUntil are due by the
// broker's clock but not yet released to their queues (the release runs
// on the broker's own goroutine; a test that moved a fake clock waits for
// this to reach 0).
func (b *Broker) DueWaiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	n := 0
	for _, it := range b.delayed.items {
		if !it.eval.WaitUntil.After(now) {
			n++
		}
	}
	return n
}

// Stats returns queue sizes.
func (b *Broker) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Stats{
		TotalUnacked:    len(b.unack),
		TotalWaiting:    len(b.timeWait) + b.delayed.Len(),
		TotalCancelable: len(b.cancelable),
		ByScheduler:     make(map[string]SchedulerStats),
	}
	for _, h := range b.pending {
		s.TotalPending += h.Len()
	}
	for name, h := range b.ready {
		st := s.ByScheduler[name]
		st.Ready = h.Len()
		s.ByScheduler[name] = st
		if name == FailedQueue {
			s.TotalFailed += h.Len()
		} else {
			s.TotalReady += h.Len()
		}
	}
	for _, u := range b.unack {
		st := s.ByScheduler[u.eval.Type]
		st.Unacked++
		s.ByScheduler[u.eval.Type] = st
	}
	return s
}

// runDelayed releases WaitUntil evals when they are due. It sleeps on a timer
// for the earliest one and is poked through update when an earlier one
// arrives.
func (b *Broker) runDelayed(stop, update chan struct{}) {
	defer b.wg.Done()
	for {
		b.mu.Lock()
		if b.stopCh != stop {
			b.mu.Unlock()
			return
		}
		now := b.clock.Now()
		for b.delayed.Len() > 0 && !b.delayed.peek().eval.WaitUntil.After(now) {
			e := b.delayed.pop().eval
			b.enqueueLocked(e, e.Type)
		}
		var fire chan struct{}
		var t clock.Timer
		if b.delayed.Len() > 0 {
			ch := make(chan struct{})
			fire = ch
			at := b.delayed.peek().eval.WaitUntil
			t = b.clock.AfterFuncAt(at, func() { close(ch) })
			// The clock may have passed at between reading now and arming
			// the timer; a fake clock fires such a timer only when it is
			// next moved, so look again rather than wait for that.
			if !at.After(b.clock.Now()) {
				t.Stop()
				b.mu.Unlock()
				continue
			}
		}
		b.mu.Unlock()
		select {
		case <-stop:
		case <-update:
		case <-fire:
		}
		if t != nil {
			t.Stop()
		}
	}
}
