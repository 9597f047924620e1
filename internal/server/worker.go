package server

import (
	"context"
	"time"

	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Worker dequeues evaluations from the leader's broker, runs the scheduler
// on a local snapshot and submits its plans. Workers run on every server.
type Worker struct {
	srv *Server
	id  int

	// set per evaluation
	eval      *structs.Evaluation
	token     string
	snapIndex uint64
}

func newWorker(s *Server, id int) *Worker { return &Worker{srv: s, id: id} }

func (w *Worker) run() {
	backoff := 50 * time.Millisecond
	for !w.srv.isShutdown() {
		var resp structs.EvalDequeueResponse
		req := &structs.EvalDequeueRequest{Schedulers: w.srv.config.EnabledSchedulers, Timeout: 500 * time.Millisecond,
			WriteRequest: structs.WriteRequest{Region: w.srv.config.Region}}
		if err := w.srv.RPC("Eval.Dequeue", req, &resp); err != nil {
			select {
			case <-w.srv.shutdownCh:
				return
			case <-time.After(backoff):
			}
			if backoff < 2*time.Second {
				backoff *= 2
			}
			continue
		}
		backoff = 50 * time.Millisecond
		if resp.Eval == nil {
			continue
		}
		w.process(resp.Eval, resp.Token, resp.WaitIndex)
	}
}

func (w *Worker) process(eval *structs.Evaluation, token string, waitIndex uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	snap, err := w.srv.State().SnapshotMinIndex(ctx, waitIndex)
	cancel()
	if err != nil {
		w.srv.logger.Warn("worker: state too far behind; nacking", "eval_id", eval.ID, "error", err)
		w.ack(eval.ID, token, false)
		return
	}
	w.eval, w.token = eval, token
	w.snapIndex, _ = snap.LatestIndex()
	defer func() { w.eval, w.token = nil, "" }()

	sched, err := scheduler.NewScheduler(eval.Type, w.schedConfig(), snap, w)
	if err == nil {
		err = sched.Process(eval)
	}
	if err != nil {
		w.srv.logger.Error("worker: scheduling failed", "eval_id", eval.ID, "job_id", eval.JobID, "error", err)
		w.ack(eval.ID, token, false)
		return
	}
	w.ack(eval.ID, token, true)
}

func (w *Worker) schedConfig() scheduler.Config {
	return scheduler.Config{Logger: w.srv.logger.Named("scheduler"), Clock: time.Now, Algorithm: w.srv.config.SchedulerAlgorithm,
		PreemptionEnabled: w.srv.config.preemptionEnabled()}
}

func (w *Worker) ack(evalID, token string, ok bool) {
	method := "Eval.Ack"
	if !ok {
		method = "Eval.Nack"
	}
	var reply structs.GenericResponse
	req := &structs.EvalAckRequest{EvalID: evalID, Token: token, WriteRequest: structs.WriteRequest{Region: w.srv.config.Region}}
	if err := w.srv.RPC(method, req, &reply); err != nil {
		w.srv.logger.Debug("worker: "+method+" failed", "eval_id", evalID, "error", err)
	}
}

// SubmitPlan implements scheduler.Planner.
func (w *Worker) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	plan.EvalToken = w.token
	plan.SnapshotIndex = w.snapIndex
	var resp structs.PlanResponse
	req := &structs.PlanRequest{Plan: plan, WriteRequest: structs.WriteRequest{Region: w.srv.config.Region}}
	if err := w.srv.RPC("Plan.Submit", req, &resp); err != nil {
		return nil, nil, err
	}
	result := resp.Result
	if result == nil || result.RefreshIndex == 0 {
		return result, nil, nil
	}
	snap, err := w.refresh(result.RefreshIndex)
	if err != nil {
		return nil, nil, err
	}
	return result, snap, nil
}

func (w *Worker) refresh(index uint64) (*state.StateSnapshot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	snap, err := w.srv.State().SnapshotMinIndex(ctx, index)
	if err != nil {
		return nil, err
	}
	w.snapIndex, _ = snap.LatestIndex()
	return snap, nil
}

func (w *Worker) evalRPC(method string, eval *structs.Evaluation) error {
	eval.SnapshotIndex = w.snapIndex
	now := time.Now().UnixNano()
	if eval.CreateTime == 0 {
		eval.CreateTime = now
	}
	eval.ModifyTime = now
	var reply structs.GenericResponse
	req := &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}, EvalToken: w.token,
		WriteRequest: structs.WriteRequest{Region: w.srv.config.Region}}
	return w.srv.RPC(method, req, &reply)
}

// UpdateEval implements scheduler.Planner.
func (w *Worker) UpdateEval(eval *structs.Evaluation) error { return w.evalRPC("Eval.Update", eval) }

// CreateEval implements scheduler.Planner.
func (w *Worker) CreateEval(eval *structs.Evaluation) error { return w.evalRPC("Eval.Create", eval) }

// ReblockEval implements scheduler.Planner.
func (w *Worker) ReblockEval(eval *structs.Evaluation) error { return w.evalRPC("Eval.Reblock", eval) }
