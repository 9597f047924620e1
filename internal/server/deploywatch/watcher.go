package deploywatch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/server/clock"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Applier writes the watcher's changes through Raft. Each call returns once
// the entry is applied (or failed); the watcher calls it from its own
// goroutines, never while holding a lock.
type Applier interface {
	// UpdateDeploymentStatus writes a DeploymentStatusUpdateRequest (entry
	// 14): a failure, with its optional rollback job and eval.
	UpdateDeploymentStatus(req *structs.DeploymentStatusUpdateRequest) (uint64, error)
	// PromoteDeployment writes an ApplyDeploymentPromoteRequest (entry 15).
	PromoteDeployment(req *structs.ApplyDeploymentPromoteRequest) (uint64, error)
	// UpdateAllocDesiredTransition writes an
	// AllocUpdateDesiredTransitionRequest (entry 27).
	UpdateAllocDesiredTransition(req *structs.AllocUpdateDesiredTransitionRequest) (uint64, error)
	// UpsertEvals creates evaluations (an eval update entry).
	UpsertEvals(evals []*structs.Evaluation) (uint64, error)
}

// Defaults of Config.
const (
	// DefaultQueryRate is how many state queries per second all deployment
	// watchers make together at most (Nomad's deploy_query_rate_limit
	// default).
	DefaultQueryRate = 100
	// DefaultEvalBatchWindow is how long evaluations for one job are
	// gathered into one.
	DefaultEvalBatchWindow = time.Second
	// DefaultAllocBatchWindow is how long replacements allowed across
	// deployments are gathered into one Raft entry.
	DefaultAllocBatchWindow = 250 * time.Millisecond
	// retryDelay is how long a deployment's watcher waits after a failed
	// write before it looks again.
	retryDelay = time.Second
)

// Config configures a Watcher. Zero values take the defaults.
type Config struct {
	// State returns the current state store (it changes when a snapshot
	// is restored).
	State   func() *state.StateStore
	Applier Applier
	Logger  hclog.Logger
	// Clock drives progress deadlines and batch windows (nil: wall clock).
	Clock            clock.Clock
	QueryRate        float64
	EvalBatchWindow  time.Duration
	AllocBatchWindow time.Duration
}

// Watcher keeps one watcher goroutine per active deployment while enabled.
type Watcher struct {
	cfg    Config
	logger hclog.Logger
	clock  clock.Clock

	mu      sync.Mutex
	enabled bool
	cancel  context.CancelFunc
	done    chan struct{}
	// watched is the number of deployments being watched (tests, stats).
	watched atomic.Int64
	// passes counts the deployment passes made (tests).
	passes atomic.Int64
}

// New returns a disabled watcher.
func New(cfg Config) *Watcher {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.QueryRate <= 0 {
		cfg.QueryRate = DefaultQueryRate
	}
	if cfg.EvalBatchWindow <= 0 {
		cfg.EvalBatchWindow = DefaultEvalBatchWindow
	}
	if cfg.AllocBatchWindow <= 0 {
		cfg.AllocBatchWindow = DefaultAllocBatchWindow
	}
	return &Watcher{cfg: cfg, logger: cfg.Logger, clock: cfg.Clock}
}

// SetEnabled starts (leadership gained) or stops (leadership lost) watching.
// Enabling rebuilds everything from the state store; disabling drops every
// pending batch and returns once every goroutine of the watcher has ended.
func (w *Watcher) SetEnabled(enabled bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if enabled == w.enabled {
		return
	}
	w.enabled = enabled
	if enabled {
		ctx, cancel := context.WithCancel(context.Background())
		w.cancel, w.done = cancel, make(chan struct{})
		r := &run{w: w, ctx: ctx, limit: newLimiter(w.cfg.QueryRate)}
		r.evals = newEvalBatcher(r)
		r.allocs = newAllocBatcher(r)
		go func(done chan struct{}) {
			defer close(done)
			r.watchDeployments()
		}(w.done)
		return
	}
	w.cancel()
	<-w.done
	w.cancel, w.done = nil, nil
	w.watched.Store(0)
}

// Enabled reports whether the watcher runs.
func (w *Watcher) Enabled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.enabled
}

// Watched is how many deployments are being watched.
func (w *Watcher) Watched() int { return int(w.watched.Load()) }

// run is one enabled period of the watcher: everything in it ends with ctx.
type run struct {
	w      *Watcher
	ctx    context.Context
	limit  *limiter
	evals  *evalBatcher
	allocs *allocBatcher
	wg     sync.WaitGroup // deployment goroutines and batch flushes
}

// watchDeployments keeps a goroutine per active deployment, following the
// deployment table with blocking queries.
func (r *run) watchDeployments() {
	type child struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	children := map[string]*child{}
	defer func() {
		for _, c := range children {
			c.cancel()
		}
		r.evals.stop()
		r.allocs.stop()
		r.wg.Wait()
	}()
	for {
		if err := r.limit.wait(r.ctx); err != nil {
			return
		}
		store := r.w.cfg.State()
		ws := memdb.NewWatchSet()
		ws.Add(store.AbandonCh())
		iter, err := store.Deployments(ws)
		if err != nil {
			r.w.logger.Error("listing deployments failed", "error", err)
			if !r.sleepCtx(r.ctx, retryDelay) {
				return
			}
			continue
		}
		active := map[string]bool{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if d := raw.(*structs.Deployment); d.Active() {
				active[d.ID] = true
			}
		}
		for id, c := range children {
			select {
			case <-c.done:
				delete(children, id) // ended on its own: inactive
				continue
			default:
			}
			if !active[id] {
				c.cancel()
				delete(children, id)
			}
		}
		for id := range active {
			if children[id] != nil {
				continue
			}
			ctx, cancel := context.WithCancel(r.ctx)
			c := &child{cancel: cancel, done: make(chan struct{})}
			children[id] = c
			r.wg.Add(1)
			go func(id string) {
				defer r.wg.Done()
				defer close(c.done)
				r.watchDeployment(ctx, id)
			}(id)
		}
		r.w.watched.Store(int64(len(children)))
		if err := ws.WatchCtx(r.ctx); err != nil {
			return
		}
	}
}

// limiter paces state queries: at most rate per second across all callers.
// It uses the wall clock: it bounds CPU, not behaviour.
type limiter struct {
	mu       sync.Mutex
	interval time.Duration
	next     time.Time
}

func newLimiter(rate float64) *limiter {
	return &limiter{interval: time.Duration(float64(time.Second) / rate)}
}

// wait returns when the caller may query, or ctx's error.
func (l *limiter) wait(ctx context.Context) error {
	l.mu.Lock()
	now := time.Now()
	at := l.next
	if at.Before(now) {
		at = now
	}
	l.next = at.Add(l.interval)
	l.mu.Unlock()
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return ctx.Err()
}
