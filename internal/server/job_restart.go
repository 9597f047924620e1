package server

import (
	"context"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/server/restarts"
	"github.com/drover-project/drover/internal/structs"
)

// jobRestartPoll bounds how long the restart runner sleeps when nothing in
// state changes (a batch wait or min_healthy_time wakes it earlier).
const jobRestartPoll = 2 * time.Second

// runJobRestarts is the leader's rolling-restart runner: it advances every
// active restart kept in state (restarts.Step) and writes each step in one
// Raft entry. It keeps no memory of its own: a new leader picks every
// restart up from state where the last one left it.
func (s *Server) runJobRestarts(stopCh chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		ws := memdb.NewWatchSet()
		wake := s.stepJobRestarts(ws, time.Now())
		wait := jobRestartPoll
		if !wake.IsZero() {
			if d := time.Until(wake); d < wait {
				wait = max(d, 10*time.Millisecond)
			}
		}
		wctx, wcancel := context.WithTimeout(ctx, wait)
		ws.WatchCtx(wctx)
		wcancel()
		if ctx.Err() != nil {
			return
		}
	}
}

// stepJobRestarts advances each active restart once and returns the
// earliest time one of them wants another look. ws watches what they read.
func (s *Server) stepJobRestarts(ws memdb.WatchSet, now time.Time) time.Time {
	st := s.State()
	iter, err := st.JobRestarts(ws)
	if err != nil {
		s.logger.Warn("job restarts: reading state", "error", err)
		return now.Add(time.Second)
	}
	var active []*structs.JobRestart
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if r := raw.(*structs.JobRestart); r.Status == structs.JobRestartStatusRunning {
			active = append(active, r)
		}
	}
	var wake time.Time
	for _, r := range active {
		job, err := st.JobByID(ws, r.Namespace, r.JobID)
		if err != nil {
			continue
		}
		allocs, err := st.AllocsByJob(ws, r.Namespace, r.JobID, true)
		if err != nil {
			continue
		}
		out := restarts.Step(restarts.Input{Restart: r, Job: job, Allocs: allocs, Now: now})
		if !out.WakeAt.IsZero() && (wake.IsZero() || out.WakeAt.Before(wake)) {
			wake = out.WakeAt
		}
		if out.Restart == nil {
			continue
		}
		req := &structs.JobRestartRequest{Restart: out.Restart, AllocWrites: out.Writes}
		if out.Eval && job != nil {
			req.Evals = []*structs.Evaluation{{ID: newID(), Namespace: job.Namespace, Priority: job.Priority, Type: job.Type,
				TriggeredBy: structs.EvalTriggerJobRestart, JobID: job.ID, JobModifyIndex: job.JobModifyIndex,
				Status: structs.EvalStatusPending, CreateTime: now.UnixNano(), ModifyTime: now.UnixNano()}}
		}
		if _, _, err := s.raftApply(structs.JobRestartRequestType, req); err != nil {
			s.logger.Warn("job restart: writing a step", "job", r.JobID, "restart", r.ID, "error", err)
			if wake.IsZero() || now.Add(time.Second).Before(wake) {
				wake = now.Add(time.Second)
			}
			continue
		}
		if out.Restart.Status != r.Status || out.Restart.Batch != r.Batch {
			s.logger.Info("job restart", "job", r.JobID, "restart", r.ID, "status", out.Restart.Status,
				"batch", out.Restart.Batch, "description", out.Restart.StatusDescription)
		}
		// Look again at once: the step may lead straight to the next one.
		wake = now
	}
	return wake
}
