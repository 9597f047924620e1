package server

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// workerPool owns the server's scheduler workers and the two semaphores
// that pace them (Worker): NumSchedulers slots, workersPerScheduler workers
// per slot, and as many start permits as slots. Both the number of slots
// and the scheduler types the workers dequeue change at runtime
// (SetSchedulerWorkerConfig, /v1/agent/schedulers/config):
//
//   - Growing raises the semaphores' bounds, then starts the new workers.
//   - Shrinking lowers the bounds, then retires the newest workers: a
//     retired worker leaves at its next loop, or at once if it is waiting
//     for a start permit; one that holds an evaluation finishes it first
//     (no evaluation is dropped, nacked or run twice for a resize). Until
//     it leaves it is listed with status "Stopping".
//   - NumSchedulers = 0 pauses scheduling on this server, as in Nomad: no
//     start permits, so no worker dequeues. The slot bound never drops
//     below one, so evaluations already dequeued (and plans waiting for
//     their commit, whose workers take a slot again afterwards) still
//     finish, one at a time; that is what keeps a pause from deadlocking.
//     (In the agent's configuration file 0 takes the default instead.)
//   - EnabledSchedulers is read by every Eval.Dequeue call, so a change
//     takes effect from each worker's next dequeue (at most the dequeue
//     timeout, 500 ms, later).
//
// Mapping to Nomad's /v1/agent/schedulers: each worker goroutine is listed
// as one of Nomad's workers (so NumSchedulers = 2 lists 32 of them). Status
// is "Started", or "Stopping" for a retired worker finishing its
// evaluation; Drover never pauses workers on the leader, so "Paused" is
// not used. WorkloadStatus is Nomad's vocabulary ("WaitingToDequeue",
// "WaitingForRaft", "Scheduling", "Submitting", "Backoff") plus
// "WaitingForSlot": holding an evaluation (or back from a plan's commit)
// and waiting for one of the NumSchedulers slots, a state Nomad's
// one-slot-per-worker pool does not have.
type workerPool struct {
	srv *Server

	mu       sync.Mutex
	num      int                  // NumSchedulers now
	workers  []*Worker            // running, oldest first
	stopping map[*Worker]struct{} // retired, finishing their evaluation
	closed   bool                 // the server shut down: start no more
	nextID   int

	enabled atomic.Pointer[[]string] // EnabledSchedulers now

	slots   *resizableSem // evaluations computed at once: max(num, 1)
	permits *resizableSem // dequeued, not yet computing: num
}

// maxNumSchedulers bounds NumSchedulers set at runtime: each slot starts
// workersPerScheduler goroutines, so a mistyped count must not start
// millions.
const maxNumSchedulers = 1024

// schedulerTypes are the names EnabledSchedulers may hold. "_core" is
// accepted as Nomad requires it in the list, but Drover runs no core
// (garbage collection) evaluations through the broker.
var schedulerTypes = []string{structs.JobTypeService, structs.JobTypeBatch, structs.JobTypeSystem,
	structs.JobTypeSysBatch, structs.JobTypeCore}

// Workload states (WorkloadStatus), Nomad's names except WaitingForSlot.
const (
	workloadWaitingToDequeue int32 = iota
	workloadWaitingForSlot
	workloadWaitingForRaft
	workloadScheduling
	workloadSubmitting
	workloadBackoff
)

var workloadNames = [...]string{"WaitingToDequeue", "WaitingForSlot", "WaitingForRaft", "Scheduling", "Submitting", "Backoff"}

func newWorkerPool(s *Server, num int, enabled []string) *workerPool {
	p := &workerPool{srv: s, stopping: map[*Worker]struct{}{},
		slots: newResizableSem(max(num, 1)), permits: newResizableSem(num)}
	p.setEnabled(enabled)
	p.mu.Lock()
	p.resizeLocked(num)
	p.mu.Unlock()
	return p
}

func (p *workerPool) setEnabled(enabled []string) {
	cp := slices.Clone(enabled)
	p.enabled.Store(&cp)
}

// enabledSchedulers is the list every dequeue asks for; callers must not
// modify it.
func (p *workerPool) enabledSchedulers() []string { return *p.enabled.Load() }

// workerCount is how many workers run for num slots.
func (p *workerPool) workerCount(num int) int {
	if num > 0 && p.srv.config.workers > 0 {
		return p.srv.config.workers
	}
	return num * workersPerScheduler
}

// resizeLocked sets the bounds for num slots and starts or retires
// workers to match.
func (p *workerPool) resizeLocked(num int) {
	p.num = num
	p.permits.setLimit(num)
	p.slots.setLimit(max(num, 1))
	want := p.workerCount(num)
	for len(p.workers) > want {
		w := p.workers[len(p.workers)-1]
		p.workers = p.workers[:len(p.workers)-1]
		p.stopping[w] = struct{}{}
		close(w.quit)
	}
	for len(p.workers) < want && !p.closed {
		w := newWorker(p, p.nextID)
		p.nextID++
		p.workers = append(p.workers, w)
		p.srv.wg.Add(1) // under p.mu, before close's barrier: never races Shutdown's Wait
		go func() {
			defer p.srv.wg.Done()
			w.run()
			p.exited(w)
		}()
	}
}

// exited forgets a worker whose run loop returned.
func (p *workerPool) exited(w *Worker) {
	p.mu.Lock()
	delete(p.stopping, w)
	p.mu.Unlock()
}

// close stops the pool from starting workers; Shutdown calls it after
// closing shutdownCh and before waiting for the server's goroutines.
func (p *workerPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

// SchedulerWorkerConfig is the worker pool's configuration
// (/v1/agent/schedulers/config).
type SchedulerWorkerConfig struct {
	NumSchedulers     int
	EnabledSchedulers []string
}

// SchedulerWorkerConfig returns the pool's current configuration.
func (s *Server) SchedulerWorkerConfig() SchedulerWorkerConfig {
	p := s.workers
	p.mu.Lock()
	defer p.mu.Unlock()
	return SchedulerWorkerConfig{NumSchedulers: p.num, EnabledSchedulers: slices.Clone(p.enabledSchedulers())}
}

// ValidateSchedulerWorkerConfig checks a configuration for
// SetSchedulerWorkerConfig; the error is a 400 naming the field.
func ValidateSchedulerWorkerConfig(c SchedulerWorkerConfig) error {
	if c.NumSchedulers < 0 || c.NumSchedulers > maxNumSchedulers {
		return structs.NewErrCoded(400, "num_schedulers must be between 0 and %d, got %d", maxNumSchedulers, c.NumSchedulers)
	}
	if len(c.EnabledSchedulers) == 0 {
		return structs.NewErrCoded(400, "enabled_schedulers must name at least one of %v", schedulerTypes)
	}
	for _, t := range c.EnabledSchedulers {
		if !slices.Contains(schedulerTypes, t) {
			return structs.NewErrCoded(400, "enabled_schedulers: unknown scheduler %q (known: %v)", t, schedulerTypes)
		}
	}
	return nil
}

// SetSchedulerWorkerConfig changes the number of scheduler slots and the
// evaluation types the workers dequeue, without a restart (see
// workerPool). It returns the configuration now in force.
func (s *Server) SetSchedulerWorkerConfig(c SchedulerWorkerConfig) (SchedulerWorkerConfig, error) {
	if err := ValidateSchedulerWorkerConfig(c); err != nil {
		return SchedulerWorkerConfig{}, err
	}
	var enabled []string
	for _, t := range c.EnabledSchedulers {
		if !slices.Contains(enabled, t) {
			enabled = append(enabled, t)
		}
	}
	p := s.workers
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return SchedulerWorkerConfig{}, errServerShutdown
	}
	if p.num != c.NumSchedulers || !slices.Equal(p.enabledSchedulers(), enabled) {
		s.logger.Info("scheduler workers reconfigured", "num_schedulers", c.NumSchedulers, "was", p.num,
			"enabled_schedulers", enabled)
	}
	p.setEnabled(enabled)
	p.resizeLocked(c.NumSchedulers)
	return SchedulerWorkerConfig{NumSchedulers: p.num, EnabledSchedulers: slices.Clone(enabled)}, nil
}

// SchedulerWorkerInfo describes one worker (/v1/agent/schedulers).
type SchedulerWorkerInfo struct {
	ID                string
	EnabledSchedulers []string
	Started           time.Time
	Status            string // "Started", or "Stopping" once retired
	WorkloadStatus    string
}

// SchedulerWorkers lists the running workers, the retiring ones last.
func (s *Server) SchedulerWorkers() []SchedulerWorkerInfo {
	p := s.workers
	p.mu.Lock()
	defer p.mu.Unlock()
	enabled := p.enabledSchedulers()
	out := make([]SchedulerWorkerInfo, 0, len(p.workers)+len(p.stopping))
	info := func(w *Worker, status string) SchedulerWorkerInfo {
		return SchedulerWorkerInfo{ID: w.uuid, EnabledSchedulers: slices.Clone(enabled), Started: w.started,
			Status: status, WorkloadStatus: workloadNames[w.workload.Load()]}
	}
	for _, w := range p.workers {
		out = append(out, info(w, "Started"))
	}
	stopping := make([]*Worker, 0, len(p.stopping))
	for w := range p.stopping {
		stopping = append(stopping, w)
	}
	sort.Slice(stopping, func(i, j int) bool { return stopping[i].id < stopping[j].id })
	for _, w := range stopping {
		out = append(out, info(w, "Stopping"))
	}
	return out
}

// resizableSem is a counting semaphore whose bound can change while tokens
// are held. Lowering the bound takes no token back: holders give theirs
// back as usual and no one takes a new one until fewer than the bound are
// held. Waiters are served in arrival order.
type resizableSem struct {
	mu      sync.Mutex
	limit   int
	held    int
	waiters []chan struct{}
}

func newResizableSem(limit int) *resizableSem { return &resizableSem{limit: limit} }

// take waits for a token; false (and no token) once a or b closes.
func (s *resizableSem) take(a, b <-chan struct{}) bool {
	s.mu.Lock()
	if s.held < s.limit && len(s.waiters) == 0 {
		s.held++
		s.mu.Unlock()
		return true
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-a:
	case <-b:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.waiters, ch); i >= 0 {
		s.waiters = slices.Delete(s.waiters, i, i+1)
		return false
	}
	// Granted while giving up: pass the token on.
	s.held--
	s.grantLocked()
	return false
}

// give returns a token.
func (s *resizableSem) give() {
	s.mu.Lock()
	if s.held <= 0 {
		s.mu.Unlock()
		panic(fmt.Sprintf("resizableSem: give without a token (held %d)", s.held))
	}
	s.held--
	s.grantLocked()
	s.mu.Unlock()
}

// setLimit changes the bound, waking waiters if it grew.
func (s *resizableSem) setLimit(n int) {
	s.mu.Lock()
	s.limit = n
	s.grantLocked()
	s.mu.Unlock()
}

// inUse is how many tokens are held.
func (s *resizableSem) inUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

func (s *resizableSem) grantLocked() {
	for s.held < s.limit && len(s.waiters) > 0 {
		ch := s.waiters[0]
		s.waiters = s.waiters[1:]
		s.held++
		close(ch)
	}
}
