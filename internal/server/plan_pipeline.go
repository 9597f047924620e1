package server

import (
	"context"
	"sort"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	metrics "github.com/hashicorp/go-metrics/compat"

	"github.com/drover-project/drover/internal/server/planqueue"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// The plan applier commits plans in batches and overlaps the verification of
// the next batch with the commit of the previous one:
//
//	dequeue every queued plan (up to maxPlanBatch)
//	verify them one after another against
//	    a fresh snapshot (index >= the last committed plan, >= each plan's snapshot)
//	  + the results of the batch still committing (if any)
//	  + the results of the plans verified before them in this batch
//	wait for the previous batch's commit
//	    failed -> verify this batch again without it (its stops may have freed
//	              the room this batch used)
//	submit this batch as ONE Raft entry, do not wait: go back to dequeue
//
// Why several plans per entry rather than several entries in flight: the FSM
// applies one entry in one state transaction, so the plans of a batch commit
// all together or not at all, and a plan verified on top of another can never
// be durable without it. Entries in flight one after another could not give
// that: an entry that fails in the FSM does not stop the next one, already in
// the log, that was verified assuming it. The batch amortises the fsync over
// every plan that queued while the previous batch was committing, and Raft
// group-commits it with whatever else is waiting (eval updates, client
// updates).
//
// The view used for verification only ever adds allocations that may not be
// committed yet and removes ones the state already removed or that a batch
// ahead in the log removes, so a plan is accepted only if it fits together
// with everything committed or committing before it.

// maxPlanBatch bounds the plans in one Raft entry.
const maxPlanBatch = 64

// planCommit is a submitted Raft entry.
type planCommit interface {
	// Wait blocks until the entry is applied (or failed) and returns its index.
	Wait() (uint64, error)
}

// planApplier is the leader's plan verification and commit loop.
type planApplier struct {
	queue  *planqueue.PlanQueue
	store  func() *state.StateStore
	submit func(reqs []*structs.ApplyPlanResultsRequest, evals []*structs.Evaluation) planCommit
	// takeEvals, if set, hands over the evaluation updates waiting to be
	// written; they ride in the next plan entry (see evalUpdateBatcher).
	takeEvals func() *evalBatch
	committed *atomic.Uint64 // index of the newest committed plan entry
	logger    hclog.Logger
}

// planBatch is one Raft entry's worth of plans.
type planBatch struct {
	pending []*planqueue.Pending
	results []*structs.PlanResult // nil: answered with an error already
	reqs    []*structs.ApplyPlanResultsRequest
	delta   *planDelta // what reqs change, per node

	done  chan struct{} // closed once committed or failed
	index uint64
	err   error
}

func (a *planApplier) run(stopCh <-chan struct{}) {
	var inflight *planBatch
	defer func() {
		if inflight != nil {
			<-inflight.done
		}
	}()
	for {
		select {
		case <-stopCh:
			return
		default:
		}
		plans := a.dequeue()
		if len(plans) == 0 {
			continue
		}
		b := a.verify(plans, inflight)
		if inflight != nil {
			<-inflight.done
			if inflight.err != nil {
				// b may rely on what the failed batch stopped.
				b = a.verify(plans, nil)
			}
			inflight = nil
		}
		inflight = a.commit(b)
	}
}

// dequeue waits up to a second for one plan, then takes every plan already
// queued behind it.
func (a *planApplier) dequeue() []*planqueue.Pending {
	first, err := a.queue.Dequeue(time.Second)
	if err != nil || first == nil {
		if err != nil {
			time.Sleep(10 * time.Millisecond) // disabled: the loop is about to stop
		}
		return nil
	}
	plans := []*planqueue.Pending{first}
	for len(plans) < maxPlanBatch {
		p, err := a.queue.TryDequeue()
		if err != nil || p == nil {
			break
		}
		plans = append(plans, p)
	}
	return plans
}

// verify decides what of each plan can commit, on top of prev (the batch
// still committing, if any) and of the plans before it in the batch.
func (a *planApplier) verify(plans []*planqueue.Pending, prev *planBatch) *planBatch {
	b := &planBatch{pending: plans, results: make([]*structs.PlanResult, len(plans)),
		delta: newPlanDelta(), done: make(chan struct{})}
	minIndex := a.committed.Load()
	for _, p := range plans {
		if p.Plan.SnapshotIndex > minIndex {
			minIndex = p.Plan.SnapshotIndex
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	snap, err := a.store().SnapshotMinIndex(ctx, minIndex)
	cancel()
	if err != nil {
		for _, p := range plans {
			p.Respond(nil, err)
		}
		return b
	}
	view := &planView{snap: snap}
	if prev != nil {
		view.layers = append(view.layers, prev.delta)
	}
	view.layers = append(view.layers, b.delta)
	for i, p := range plans {
		start := time.Now()
		result, err := evaluatePlan(view, p.Plan)
		metrics.MeasureSince(keyPlanEvaluate, start)
		if err != nil {
			p.Respond(nil, err)
			continue
		}
		b.results[i] = result
		if isEmptyResult(result) {
			continue
		}
		req := planResultRequest(p.Plan, result)
		req.PreemptionEvals = preemptionEvals(view, result)
		b.reqs = append(b.reqs, req)
		b.delta.record(result)
	}
	return b
}

// commit submits b (if it has anything to write) and answers its plans once
// the entry is applied. It returns the batch in flight, or nil.
func (a *planApplier) commit(b *planBatch) *planBatch {
	if len(b.reqs) == 0 {
		b.respond(a.committed.Load(), nil)
		close(b.done)
		return nil
	}
	var evals *evalBatch
	if a.takeEvals != nil {
		evals = a.takeEvals()
	}
	var updates []*structs.Evaluation
	if evals != nil {
		updates = evals.evals
	}
	start := time.Now()
	c := a.submit(b.reqs, updates)
	go func() {
		b.index, b.err = c.Wait()
		metrics.MeasureSince(keyPlanApply, start)
		if b.err == nil {
			a.committed.Store(b.index)
		} else {
			a.logger.Error("plan apply failed", "plans", len(b.reqs), "error", b.err)
		}
		if evals != nil {
			evals.finish(b.index, b.err)
		}
		b.respond(b.index, b.err)
		close(b.done)
	}()
	return b
}

// respond answers every plan of the batch that has not been answered yet.
// index is the batch's commit index (or the newest committed one when the
// batch wrote nothing): a worker told to refresh waits at least for it, so it
// sees whatever made its plan not fit, committing batches included.
func (b *planBatch) respond(index uint64, err error) {
	for i, p := range b.pending {
		result := b.results[i]
		if result == nil {
			continue
		}
		if err != nil && !isEmptyResult(result) {
			p.Respond(nil, err)
			continue
		}
		if !isEmptyResult(result) {
			result.AllocIndex = index
		}
		if result.RefreshIndex != 0 && result.RefreshIndex < index {
			result.RefreshIndex = index
		}
		p.Respond(result, nil)
	}
}

// planView is what the applier verifies against: a state snapshot with the
// results of not yet committed plans layered on top, oldest first.
type planView struct {
	snap   *state.StateSnapshot
	layers []*planDelta

	// live reads a node's live allocations from the snapshot through the
	// state's memo (created on first use; verification is sequential).
	live func(nodeID string) (*state.LiveAllocs, error)
}

// liveAllocs returns the node's live allocations in the snapshot, through
// the state's memo.
func (v *planView) liveAllocs(nodeID string) (*state.LiveAllocs, error) {
	if v.live == nil {
		v.live = v.snap.LiveAllocsByNodeReader()
	}
	return v.live(nodeID)
}

// overrides merges what the layers change on the node, oldest first:
// allocation ID -> the allocation now there, or nil when stopped. Nil when
// no layer touches the node.
func (v *planView) overrides(nodeID string) map[string]*structs.Allocation {
	var over map[string]*structs.Allocation
	for _, l := range v.layers {
		m := l.nodes[nodeID]
		if len(m) == 0 {
			continue
		}
		if over == nil {
			over = make(map[string]*structs.Allocation, len(m))
		}
		for id, a := range m {
			over[id] = a
		}
	}
	return over
}

// allocsOnNode returns the allocations holding resources on the node (read
// through the same memo as evaluateNodeTotals; never modify the slice).
func (v *planView) allocsOnNode(nodeID string) ([]*structs.Allocation, error) {
	live, err := v.liveAllocs(nodeID)
	if err != nil {
		return nil, err
	}
	existing := live.Allocs
	over := v.overrides(nodeID)
	if over == nil {
		return existing, nil
	}
	out := make([]*structs.Allocation, 0, len(existing)+len(over))
	for _, a := range existing {
		if o, ok := over[a.ID]; ok {
			if o != nil {
				out = append(out, o)
			}
			delete(over, a.ID)
			continue
		}
		out = append(out, a)
	}
	added := make([]string, 0, len(over))
	for id, a := range over {
		if a != nil {
			added = append(added, id)
		}
	}
	sort.Strings(added)
	for _, id := range added {
		out = append(out, over[id])
	}
	return out, nil
}

// allocByID finds an allocation in the layers (newest first), then in the
// snapshot.
func (v *planView) allocByID(id string) (*structs.Allocation, error) {
	for i := len(v.layers) - 1; i >= 0; i-- {
		if a, ok := v.layers[i].byID[id]; ok && a != nil {
			return a, nil
		}
	}
	return v.snap.AllocByID(nil, id)
}

// planDelta is what a set of accepted plan results will change, per node:
// allocation ID -> the allocation now holding resources there, or nil when
// the plan stops or evicts it.
type planDelta struct {
	nodes map[string]map[string]*structs.Allocation
	byID  map[string]*structs.Allocation
}

func newPlanDelta() *planDelta {
	return &planDelta{nodes: map[string]map[string]*structs.Allocation{}, byID: map[string]*structs.Allocation{}}
}

func (d *planDelta) set(nodeID, allocID string, a *structs.Allocation) {
	m := d.nodes[nodeID]
	if m == nil {
		m = map[string]*structs.Allocation{}
		d.nodes[nodeID] = m
	}
	m[allocID] = a
	if a != nil {
		d.byID[allocID] = a
	}
}

// record adds an accepted result: stops and preemptions free their
// allocations, placements and updates hold theirs.
func (d *planDelta) record(r *structs.PlanResult) {
	for node, list := range r.NodeUpdate {
		for _, a := range list {
			d.set(node, a.ID, nil)
		}
	}
	for node, list := range r.NodePreemptions {
		for _, a := range list {
			d.set(node, a.ID, nil)
		}
	}
	for node, list := range r.NodeAllocation {
		for _, a := range list {
			if a.TerminalStatus() {
				d.set(node, a.ID, nil)
				continue
			}
			d.set(node, a.ID, a)
		}
	}
}
