package drainer

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Raft is how the drainer writes.
type Raft interface {
	// SetDesiredTransitions applies an AllocUpdateDesiredTransitionRequest.
	SetDesiredTransitions(req *structs.AllocUpdateDesiredTransitionRequest) error
	// CompleteDrains applies a BatchNodeUpdateDrainRequest.
	CompleteDrains(req *structs.BatchNodeUpdateDrainRequest) error
}

// maxBatch bounds the allocations one Raft entry moves.
const maxBatch = 1000

// minPass spaces passes so a burst of state changes (every allocation of a
// large drain reporting in) costs one pass, not one per change.
const minPass = 100 * time.Millisecond

// Drainer runs drains while its server leads.
type Drainer struct {
	State  func() *state.StateStore
	Raft   Raft
	Logger hclog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	kick chan struct{}
}

// New returns a drainer.
func New(st func() *state.StateStore, raft Raft, logger hclog.Logger) *Drainer {
	return &Drainer{State: st, Raft: raft, Logger: logger, kick: make(chan struct{}, 1)}
}

// Kick asks for a pass now (a drain was set or changed).
func (d *Drainer) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

func (d *Drainer) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Run drains until stop closes (leadership lost).
func (d *Drainer) Run(stop <-chan struct{}) {
	for {
		st := d.State()
		ws := memdb.NewWatchSet()
		ws.Add(st.AbandonCh())
		wake, err := d.pass(st, ws)
		if err != nil {
			d.Logger.Error("drain pass failed", "error", err)
			wake = d.now().Add(time.Second)
		}
		d.wait(stop, ws, wake)
		select {
		case <-stop:
			return
		case <-time.After(minPass):
		}
	}
}

// wait returns when stop closes, a kick comes, what ws watches changes, or
// wake (if set) arrives.
func (d *Drainer) wait(stop <-chan struct{}, ws memdb.WatchSet, wake time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var timer <-chan time.Time
	if !wake.IsZero() {
		t := time.NewTimer(max(time.Until(wake), minPass))
		defer t.Stop()
		timer = t.C
	}
	go func() {
		select {
		case <-stop:
		case <-d.kick:
		case <-timer:
		case <-ctx.Done():
		}
		cancel()
	}()
	ws.WatchCtx(ctx)
}

// pass computes and writes one round; it returns when time alone next
// matters.
func (d *Drainer) pass(st *state.StateStore, ws memdb.WatchSet) (time.Time, error) {
	snap, err := st.Snapshot()
	if err != nil {
		return time.Time{}, err
	}
	nodes, err := snap.DrainingNodes(ws)
	if err != nil || len(nodes) == 0 {
		return time.Time{}, err
	}
	now := d.now()
	p, err := Compute(snap, ws, nodes, now)
	if err != nil {
		return time.Time{}, err
	}
	if err := d.migrate(snap, p.Migrate, now); err != nil {
		return time.Time{}, err
	}
	if len(p.Complete) > 0 {
		req := &structs.BatchNodeUpdateDrainRequest{Updates: map[string]*structs.DrainUpdate{},
			NodeEvents: map[string]*structs.NodeEvent{}, UpdatedAt: now.UnixNano()}
		for _, id := range p.Complete {
			req.Updates[id] = &structs.DrainUpdate{}
			req.NodeEvents[id] = &structs.NodeEvent{Message: structs.NodeDrainEventComplete, Subsystem: "Drain", Timestamp: now}
		}
		if err := d.Raft.CompleteDrains(req); err != nil {
			return time.Time{}, err
		}
		d.Logger.Info("node drains complete", "nodes", p.Complete)
	}
	if len(p.Forced) > 0 {
		d.Logger.Warn("node drain deadline reached: moving every remaining allocation", "nodes", p.Forced)
	}
	return p.Wake, nil
}

// migrate marks the allocations in bounded entries, each with one
// node-drain evaluation per job it touches.
func (d *Drainer) migrate(r Reader, allocs []*structs.Allocation, now time.Time) error {
	for len(allocs) > 0 {
		batch := allocs[:min(len(allocs), maxBatch)]
		allocs = allocs[len(batch):]
		req := &structs.AllocUpdateDesiredTransitionRequest{Allocs: map[string]*structs.DesiredTransition{}}
		seen := map[structs.NamespacedID]bool{}
		for _, a := range batch {
			t := true
			req.Allocs[a.ID] = &structs.DesiredTransition{Migrate: &t}
			k := structs.NamespacedID{Namespace: a.Namespace, ID: a.JobID}
			if seen[k] {
				continue
			}
			seen[k] = true
			e := &structs.Evaluation{ID: uuid.NewString(), Namespace: a.Namespace, JobID: a.JobID,
				TriggeredBy: structs.EvalTriggerNodeDrain, Status: structs.EvalStatusPending,
				Priority: structs.JobDefaultPriority, Type: structs.JobTypeService,
				CreateTime: now.UnixNano(), ModifyTime: now.UnixNano()}
			if j, err := r.JobByID(nil, a.Namespace, a.JobID); err == nil && j != nil {
				e.Priority, e.Type, e.JobModifyIndex = j.Priority, j.Type, j.JobModifyIndex
			} else if a.Job != nil {
				e.Type = a.Job.Type
			}
			req.Evals = append(req.Evals, e)
		}
		if err := d.Raft.SetDesiredTransitions(req); err != nil {
			return err
		}
		d.Logger.Debug("allocations marked for migration", "allocs", len(batch), "evals", len(req.Evals))
	}
	return nil
}
