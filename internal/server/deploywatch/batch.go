package deploywatch

import (
	"sort"
	"sync"

	"github.com/drover-project/drover/internal/server/clock"
	"github.com/drover-project/drover/internal/structs"
)

// evalBatcher gathers the evaluations deployment watchers ask for: one per
// job within the window (the first asked for wins; they are equivalent), all
// written in one entry when the window closes.
type evalBatcher struct {
	r *run

	mu      sync.Mutex
	pending map[structs.NamespacedID]*structs.Evaluation
	timer   clock.Timer
}

func newEvalBatcher(r *run) *evalBatcher { return &evalBatcher{r: r} }

func (b *evalBatcher) add(e *structs.Evaluation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.r.ctx.Err() != nil {
		return
	}
	key := structs.NamespacedID{Namespace: e.Namespace, ID: e.JobID}
	if b.pending == nil {
		b.pending = map[structs.NamespacedID]*structs.Evaluation{}
		b.r.wg.Add(1)
		b.timer = b.r.w.clock.AfterFunc(b.r.w.cfg.EvalBatchWindow, b.flush)
	}
	if b.pending[key] == nil {
		b.pending[key] = e
	}
}

func (b *evalBatcher) flush() {
	defer b.r.wg.Done()
	b.mu.Lock()
	pending := b.pending
	b.pending, b.timer = nil, nil
	b.mu.Unlock()
	if b.r.ctx.Err() != nil || len(pending) == 0 {
		return
	}
	evals := make([]*structs.Evaluation, 0, len(pending))
	for _, e := range pending {
		evals = append(evals, e)
	}
	sort.Slice(evals, func(i, j int) bool { return evals[i].JobID < evals[j].JobID })
	if _, err := b.r.w.cfg.Applier.UpsertEvals(evals); err != nil {
		b.r.w.logger.Warn("creating deployment evaluations failed", "evals", len(evals), "error", err)
	}
}

// allocBatcher gathers the allocations deployment watchers allow the
// scheduler to replace, with one eval per job, into one
// AllocUpdateDesiredTransitionRequest per window.
type allocBatcher struct {
	r *run

	mu      sync.Mutex
	allocs  map[string]*structs.DesiredTransition
	evals   map[structs.NamespacedID]*structs.Evaluation
	started bool
	timer   clock.Timer
}

func newAllocBatcher(r *run) *allocBatcher { return &allocBatcher{r: r} }

func (b *allocBatcher) add(ids []string, e *structs.Evaluation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.r.ctx.Err() != nil {
		return
	}
	if !b.started {
		b.started = true
		b.allocs = map[string]*structs.DesiredTransition{}
		b.evals = map[structs.NamespacedID]*structs.Evaluation{}
		b.r.wg.Add(1)
		b.timer = b.r.w.clock.AfterFunc(b.r.w.cfg.AllocBatchWindow, b.flush)
	}
	reschedule := true
	for _, id := range ids {
		b.allocs[id] = &structs.DesiredTransition{Reschedule: &reschedule}
	}
	key := structs.NamespacedID{Namespace: e.Namespace, ID: e.JobID}
	if b.evals[key] == nil {
		b.evals[key] = e
	}
}

func (b *allocBatcher) flush() {
	defer b.r.wg.Done()
	b.mu.Lock()
	req := &structs.AllocUpdateDesiredTransitionRequest{Allocs: b.allocs}
	for _, e := range b.evals {
		req.Evals = append(req.Evals, e)
	}
	b.allocs, b.evals, b.started, b.timer = nil, nil, false, nil
	b.mu.Unlock()
	if b.r.ctx.Err() != nil || len(req.Allocs) == 0 {
		return
	}
	sort.Slice(req.Evals, func(i, j int) bool { return req.Evals[i].JobID < req.Evals[j].JobID })
	if _, err := b.r.w.cfg.Applier.UpdateAllocDesiredTransition(req); err != nil {
		b.r.w.logger.Warn("allowing replacements failed", "allocs", len(req.Allocs), "error", err)
	}
}

// stop drops a pending eval batch (the run ended: a new leader rebuilds
// what it still needs from state).
func (b *evalBatcher) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timer != nil && b.timer.Stop() {
		b.r.wg.Done()
	}
	b.pending, b.timer = nil, nil
}

// stop drops a pending replacement batch.
func (b *allocBatcher) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timer != nil && b.timer.Stop() {
		b.r.wg.Done()
	}
	b.allocs, b.evals, b.started, b.timer = nil, nil, false, nil
}
