package deploywatch

import (
	"context"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/server/clock"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// watchDeployment follows one deployment until it is no longer active or
// ctx ends: each pass reads the deployment, its allocations and the job's
// evaluations from one snapshot, acts on decide's answer, then blocks until
// one of them changes or the progress deadline passes.
func (r *run) watchDeployment(ctx context.Context, id string) {
	logger := r.w.logger.With("deployment_id", id)
	wake := make(chan struct{}, 1)
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	var timer clock.Timer
	var armedAt time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if err := r.limit.wait(ctx); err != nil {
			return
		}
		snap, err := r.w.cfg.State().Snapshot()
		if err != nil {
			logger.Error("state snapshot failed", "error", err)
			if !r.sleepCtx(ctx, retryDelay) {
				return
			}
			continue
		}
		ws := memdb.NewWatchSet()
		ws.Add(snap.AbandonCh())
		v, err := readView(snap, ws, id, r.w.clock.Now())
		if err != nil {
			logger.Error("reading deployment failed", "error", err)
			if !r.sleepCtx(ctx, retryDelay) {
				return
			}
			continue
		}
		if v.d == nil || !v.d.Active() {
			return
		}
		dec := decide(v)
		r.w.passes.Add(1)
		if err := r.act(snap, v, dec, logger); err != nil {
			if ctx.Err() != nil {
				return
			}
			logger.Warn("deployment update failed; retrying", "error", err)
			if !r.sleepCtx(ctx, retryDelay) {
				return
			}
			continue
		}
		// A failure or promotion just written changes the deployment,
		// which wakes the watch set below at once.
		if !dec.deadline.Equal(armedAt) {
			if timer != nil {
				timer.Stop()
				timer = nil
			}
			armedAt = dec.deadline
			if !armedAt.IsZero() {
				timer = r.w.clock.AfterFuncAt(armedAt, signal)
				// A clock that passed armedAt while the timer was armed
				// (a fake one fires it only when next moved): wake now.
				if !armedAt.After(r.w.clock.Now()) {
					signal()
				}
			}
		}
		wctx, cancel := context.WithCancel(ctx)
		select {
		case <-ws.WatchCh(wctx):
		case <-wake:
		case <-ctx.Done():
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
	}
}

// readView reads one pass's inputs; the deployment and its job's
// allocations are added to ws.
func readView(snap *state.StateSnapshot, ws memdb.WatchSet, id string, now time.Time) (view, error) {
	v := view{now: now}
	d, err := snap.DeploymentByID(ws, id)
	if err != nil || d == nil {
		return v, err
	}
	v.d = d
	if v.job, err = snap.JobByID(nil, d.Namespace, d.JobID); err != nil {
		return v, err
	}
	if v.job != nil && d.JobCreateIndex != 0 && v.job.CreateIndex != d.JobCreateIndex {
		v.job = nil // purged and registered again: not this deployment's job
	}
	all, err := snap.AllocsByJob(ws, d.Namespace, d.JobID, true)
	if err != nil {
		return v, err
	}
	for _, a := range all {
		if a.DeploymentID == id {
			v.allocs = append(v.allocs, a)
		}
	}
	evals, err := snap.EvalsByJob(nil, d.Namespace, d.JobID)
	if err != nil {
		return v, err
	}
	v.latestEval = latestEvalIndex(evals, now)
	return v, nil
}

// act carries a decision out. Failures and promotions are written at once;
// replacements and evals join their batches.
func (r *run) act(snap *state.StateSnapshot, v view, dec decision, logger hclog.Logger) error {
	d := v.d
	switch {
	case dec.fail:
		req, err := failRequest(snap, v, dec, r.w.clock.Now())
		if err != nil {
			return err
		}
		if _, err := r.w.cfg.Applier.UpdateDeploymentStatus(req); err != nil {
			return err
		}
		logger.Info("deployment failed", "reason", req.DeploymentUpdate.StatusDescription)
		return nil
	case dec.promote:
		req := &structs.ApplyDeploymentPromoteRequest{
			DeploymentPromoteRequest: structs.DeploymentPromoteRequest{DeploymentID: d.ID, All: true},
			Eval:                     newEval(d, v.job, r.w.clock.Now()),
		}
		if _, err := r.w.cfg.Applier.PromoteDeployment(req); err != nil {
			return err
		}
		logger.Info("deployment canaries promoted automatically")
		return nil
	}
	if len(dec.allowReplacements) > 0 {
		r.allocs.add(dec.allowReplacements, newEval(d, v.job, r.w.clock.Now()))
	} else if dec.createEval {
		r.evals.add(newEval(d, v.job, r.w.clock.Now()))
	}
	return nil
}

// failRequest builds the Raft entry that fails a deployment: its status, an
// eval so the scheduler acts on it and, when a failed group auto-reverts,
// the job's latest stable version registered again.
func failRequest(snap *state.StateSnapshot, v view, dec decision, now time.Time) (*structs.DeploymentStatusUpdateRequest, error) {
	d := v.d
	desc := dec.failDesc
	var rollback *structs.Job
	if dec.rollback && v.job != nil {
		versions, err := snap.JobVersionsByID(nil, d.Namespace, d.JobID)
		if err != nil {
			return nil, err
		}
		sort.Slice(versions, func(i, j int) bool { return versions[i].Version > versions[j].Version })
		switch target := rollbackTarget(versions, d, v.job); {
		case target == nil:
			desc = descNoRollbackTarget(desc)
		case !target.SpecChanged(v.job):
			desc = descRollbackSameSpec(desc, target.Version)
		default:
			desc = descRollback(desc, target.Version)
			rollback = target.Copy()
			// A new version of the old spec: it has to prove itself again.
			rollback.Stable, rollback.VersionTag = false, nil
			rollback.SubmitTime = now.UnixNano()
		}
	}
	return &structs.DeploymentStatusUpdateRequest{
		DeploymentUpdate: &structs.DeploymentStatusUpdate{
			DeploymentID:      d.ID,
			Status:            structs.DeploymentStatusFailed,
			StatusDescription: desc,
		},
		Job:  rollback,
		Eval: newEval(d, v.job, now),
	}, nil
}

// newEval is an evaluation of the deployment's job by the watcher.
func newEval(d *structs.Deployment, job *structs.Job, now time.Time) *structs.Evaluation {
	e := &structs.Evaluation{
		ID:           uuid.NewString(),
		Namespace:    d.Namespace,
		Priority:     d.EvalPriority,
		Type:         structs.JobTypeService,
		TriggeredBy:  structs.EvalTriggerDeploymentWatcher,
		JobID:        d.JobID,
		DeploymentID: d.ID,
		Status:       structs.EvalStatusPending,
		CreateTime:   now.UnixNano(),
		ModifyTime:   now.UnixNano(),
	}
	if job != nil {
		e.Type = job.Type
		e.JobModifyIndex = job.JobModifyIndex
		if e.Priority == 0 {
			e.Priority = job.Priority
		}
	}
	if e.Priority == 0 {
		e.Priority = structs.JobDefaultPriority
	}
	return e
}

// sleepCtx waits d on the clock; false when ctx ended.
func (r *run) sleepCtx(ctx context.Context, d time.Duration) bool {
	ch := make(chan struct{})
	t := r.w.clock.AfterFunc(d, func() { close(ch) })
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}
