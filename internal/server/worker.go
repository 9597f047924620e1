package server

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"

	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Worker dequeues evaluations from the leader's broker, runs the scheduler
// on a local snapshot and submits its plans. Workers run on every server.
//
// The evaluation's final status update does not hold the worker: the
// scheduler's last UpdateEval is kept back (deferred) and, once Process
// returns, written by a completion goroutine that acks the evaluation after
// the write commits (nacks it if the write fails), while the worker already
// dequeues the next one. The broker keeps the evaluation outstanding until
// that ack, so no other evaluation of the job is handed out before its
// status is durable, and an evaluation whose status write is lost (failed
// write, leadership lost) is still pending in the state: it is redelivered,
// or re-run by the next leader. A deferred update is written first, in
// order, if the scheduler calls the planner again after it.
type Worker struct {
	srv  *Server
	pool *workerPool
	id   int
	rpc  func(method string, args, reply any) error

	// completions in flight; a send blocks once maxCompletions are.
	inflight chan struct{}

	slot   semHold // a scheduler slot (workerPool.slots)
	permit semHold // a start permit (workerPool.permits)

	// for /v1/agent/schedulers (worker_pool.go)
	uuid     string
	started  time.Time
	workload atomic.Int32  // a workload* state
	quit     chan struct{} // closed when the pool retires the worker

	// set per evaluation
	eval      *structs.Evaluation
	token     string
	snapIndex uint64
	deferred  *structs.EvalUpdateRequest // the status update kept back
}

// workersPerScheduler is how many workers run per scheduler slot
// (Config.NumSchedulers): a worker holds a slot while it computes, not while
// it waits for its plan to commit, so the others keep the slots busy. A
// small evaluation computes in a fraction of a millisecond and then waits
// one Raft commit (several milliseconds, longer under load) for its plan:
// with four workers per slot the many-tiny-jobs benchmark left the CPU
// partly idle with evaluations queued (934 vs 1,415 jobs/s at 16 per slot,
// 2 slots, 64 submitters). Idle workers cost a parked goroutine each.
const workersPerScheduler = 16

// maxWaitingPlaced bounds the allocations in the plans of workers waiting
// for their commit without a slot. A waiting worker keeps its evaluation's
// scheduler state and plan alive (several MB for a plan of a thousand
// placements): with four workers per slot, large plans waiting together
// raised the server's peak memory by ~200 MB at 100,000 allocations. A
// plan that would pass the bound waits holding its slot, as before, so
// large evaluations are not pipelined beyond one waiting plan's worth,
// while small ones (the many-tiny-jobs case) still are.
const maxWaitingPlaced = 1024

// maxCompletions bounds a worker's evaluations whose status write is still
// in flight.
const maxCompletions = 16

func newWorker(p *workerPool, id int) *Worker {
	s := p.srv
	w := &Worker{srv: s, pool: p, id: id, rpc: s.RPC, inflight: make(chan struct{}, maxCompletions),
		slot: semHold{sem: p.slots}, permit: semHold{sem: p.permits},
		uuid: newID(), started: time.Now(), quit: make(chan struct{})}
	if s.config.workerRPC != nil {
		w.rpc = s.config.workerRPC
	}
	return w
}

// run dequeues and processes evaluations until the server shuts down or
// the pool retires the worker (it finishes the evaluation it holds first).
//
// A worker dequeues only with a start permit (workerPool.permits, as many
// as scheduler slots), given back once it holds a slot or the dequeue came
// back empty. Workers waiting for their plans' commits are many; without
// the permits each idle one would take an evaluation from the broker and
// sit on it until a slot frees: evaluations would wait outside the
// broker's priority order, with their nack timers running.
func (w *Worker) run() {
	backoff := 50 * time.Millisecond
	for !w.srv.isShutdown() && !w.retired() {
		w.setWorkload(workloadWaitingToDequeue)
		if !w.takePermit() {
			return
		}
		var resp structs.EvalDequeueResponse
		req := &structs.EvalDequeueRequest{Schedulers: w.pool.enabledSchedulers(), Timeout: 500 * time.Millisecond,
			WriteRequest: structs.WriteRequest{Region: w.srv.config.Region}}
		if err := w.rpc("Eval.Dequeue", req, &resp); err != nil {
			w.givePermit()
			w.setWorkload(workloadBackoff)
			select {
			case <-w.srv.shutdownCh:
				return
			case <-w.quit:
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
			w.givePermit()
			continue
		}
		w.process(resp.Eval, resp.Token, resp.WaitIndex)
	}
}

// semHold is a worker's token in one of the pool's counting semaphores
// (workerPool.slots, workerPool.permits).
type semHold struct {
	sem  *resizableSem // nil: no bound
	held bool
}

// take waits for a token unless one is held; false once a or b closes.
func (h *semHold) take(a, b <-chan struct{}) bool {
	if h.sem == nil || h.held {
		return true
	}
	h.held = h.sem.take(a, b)
	return h.held
}

// give returns the token, if held.
func (h *semHold) give() {
	if h.held {
		h.held = false
		h.sem.give()
	}
}

// retired reports whether the pool has retired the worker.
func (w *Worker) retired() bool {
	select {
	case <-w.quit:
		return true
	default:
		return false
	}
}

func (w *Worker) setWorkload(state int32) { w.workload.Store(state) }

// takePermit waits for a start permit; false once the server shuts down or
// the worker is retired (it holds no evaluation then).
func (w *Worker) takePermit() bool { return w.permit.take(w.srv.shutdownCh, w.quit) }

// givePermit returns the start permit, if held.
func (w *Worker) givePermit() { w.permit.give() }

// acquire takes a scheduler slot; false once the server shuts down. A
// retired worker still takes one: it holds an evaluation to finish.
func (w *Worker) acquire() bool {
	w.setWorkload(workloadWaitingForSlot)
	ok := w.slot.take(w.srv.shutdownCh, nil)
	w.setWorkload(workloadScheduling)
	return ok
}

// release gives the slot back, if held.
func (w *Worker) release() { w.slot.give() }

// waitOff runs fn (a call that waits on the leader) without holding the
// scheduler slot, and takes a slot again before the scheduler goes on.
func (w *Worker) waitOff(fn func() error) error {
	w.release()
	err := fn()
	if !w.acquire() && err == nil {
		err = errServerShutdown
	}
	return err
}

var errServerShutdown = errors.New("server is shutting down")

func (w *Worker) process(eval *structs.Evaluation, token string, waitIndex uint64) {
	// The slot first: the snapshot is then as fresh as the scheduler can
	// get (a stale one makes plans the applier rejects).
	ok := w.acquire()
	w.givePermit()
	if !ok {
		w.ack(eval.ID, token, false)
		return
	}
	w.setWorkload(workloadWaitingForRaft)
	// The server shutting down ends the wait (it would hold Shutdown).
	ctx, cancel := context.WithTimeout(w.srv.shutdownCtx, 5*time.Second)
	snap, err := w.srv.State().SnapshotMinIndex(ctx, waitIndex)
	cancel()
	w.setWorkload(workloadScheduling)
	if err != nil {
		w.release()
		w.srv.logger.Warn("worker: state too far behind; nacking", "eval_id", eval.ID, "error", err)
		w.ack(eval.ID, token, false)
		return
	}
	w.eval, w.token = eval, token
	w.snapIndex, _ = snap.LatestIndex()
	defer func() { w.eval, w.token, w.deferred = nil, "", nil }()

	start := time.Now()
	sched, err := scheduler.NewScheduler(eval.Type, w.srv.schedulerOptions(w.schedConfig(), snap, eval.Namespace, eval.JobID), snap, w)
	if err == nil {
		err = sched.Process(eval)
	}
	measureInvoke(eval.Type, start)
	w.release()
	if err != nil {
		// A kept-back status update is dropped: the eval is redelivered.
		w.srv.logger.Error("worker: scheduling failed", "eval_id", eval.ID, "job_id", eval.JobID, "error", err)
		w.ack(eval.ID, token, false)
		return
	}
	if w.deferred == nil {
		w.ack(eval.ID, token, true)
		return
	}
	w.complete(w.deferred)
}

// complete writes a kept-back status update in the background, then acks
// the evaluation (nacks it if the write failed). It blocks while the worker
// already has maxCompletions in flight.
func (w *Worker) complete(req *structs.EvalUpdateRequest) {
	w.inflight <- struct{}{}
	w.srv.wg.Add(1) // the worker's own count is held: never races Shutdown's Wait
	go func() {
		defer w.srv.wg.Done()
		defer func() { <-w.inflight }()
		evalID := req.Evals[0].ID
		var reply structs.GenericResponse
		err := w.rpc("Eval.Update", req, &reply)
		if err != nil {
			w.srv.logger.Warn("worker: writing evaluation status failed; nacking", "eval_id", evalID, "error", err)
		}
		w.ack(evalID, req.EvalToken, err == nil)
	}()
}

// flush writes a kept-back status update now: the scheduler called the
// planner again after it, and the writes must keep their order.
func (w *Worker) flush() error {
	req := w.deferred
	if req == nil {
		return nil
	}
	w.deferred = nil
	var reply structs.GenericResponse
	return w.rpc("Eval.Update", req, &reply)
}

func (w *Worker) schedConfig() scheduler.Config {
	now := time.Now
	if w.srv.config.schedulerClock != nil {
		now = w.srv.config.schedulerClock
	}
	return scheduler.Config{Logger: w.srv.logger.Named("scheduler"), Clock: now, Superseded: w.srv.jobSuperseded}
}

// jobSuperseded reports whether job, as a scheduler's snapshot has it, is
// no longer current in the live state: purged, stopped since, or
// registered anew (a new JobModifyIndex). Each of those writes its own
// evaluation, which the broker hands out once the running one is done, so
// the running one may stop early (scheduler.Config.Superseded).
func (s *Server) jobSuperseded(job *structs.Job) bool {
	live, err := s.State().JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return false
	}
	return live == nil || (live.Stop && !job.Stop) || live.JobModifyIndex != job.JobModifyIndex
}

func (w *Worker) ack(evalID, token string, ok bool) {
	method := "Eval.Ack"
	if !ok {
		method = "Eval.Nack"
	}
	var reply structs.GenericResponse
	req := &structs.EvalAckRequest{EvalID: evalID, Token: token, WriteRequest: structs.WriteRequest{Region: w.srv.config.Region}}
	if err := w.rpc(method, req, &reply); err != nil {
		w.srv.logger.Debug("worker: "+method+" failed", "eval_id", evalID, "error", err)
	}
}

// SubmitPlan implements scheduler.Planner.
func (w *Worker) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	if err := w.flush(); err != nil {
		return nil, nil, err
	}
	defer metrics.MeasureSince(keyWorkerSubmit, time.Now())
	plan.EvalToken = w.token
	plan.SnapshotIndex = w.snapIndex
	var resp structs.PlanResponse
	req := &structs.PlanRequest{Plan: plan, WriteRequest: structs.WriteRequest{Region: w.srv.config.Region}}
	submit := func() error { return w.rpc("Plan.Submit", req, &resp) }
	w.setWorkload(workloadSubmitting)
	var err error
	if n := int64(planSize(plan)); w.srv.waitingPlaced.Add(n) <= maxWaitingPlaced {
		err = w.waitOff(submit)
		w.srv.waitingPlaced.Add(-n)
	} else {
		w.srv.waitingPlaced.Add(-n)
		err = submit()
		w.setWorkload(workloadScheduling)
	}
	if err != nil {
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
	ctx, cancel := context.WithTimeout(w.srv.shutdownCtx, 10*time.Second)
	defer cancel()
	w.setWorkload(workloadWaitingForRaft)
	snap, err := w.srv.State().SnapshotMinIndex(ctx, index)
	w.setWorkload(workloadScheduling)
	if err != nil {
		return nil, err
	}
	w.snapIndex, _ = snap.LatestIndex()
	return snap, nil
}

func (w *Worker) evalRequest(eval *structs.Evaluation) *structs.EvalUpdateRequest {
	eval.SnapshotIndex = w.snapIndex
	now := time.Now().UnixNano()
	if eval.CreateTime == 0 {
		eval.CreateTime = now
	}
	eval.ModifyTime = now
	return &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}, EvalToken: w.token,
		WriteRequest: structs.WriteRequest{Region: w.srv.config.Region}}
}

func (w *Worker) evalRPC(method string, eval *structs.Evaluation) error {
	if err := w.flush(); err != nil {
		return err
	}
	var reply structs.GenericResponse
	return w.rpc(method, w.evalRequest(eval), &reply)
}

// UpdateEval implements scheduler.Planner. The update of the evaluation
// being processed is kept back (see Worker); it is written when Process
// returns, or before the next planner call.
func (w *Worker) UpdateEval(eval *structs.Evaluation) error {
	if w.eval == nil || eval.ID != w.eval.ID {
		return w.evalRPC("Eval.Update", eval)
	}
	if err := w.flush(); err != nil {
		return err
	}
	w.deferred = w.evalRequest(eval)
	return nil
}

// CreateEval implements scheduler.Planner.
func (w *Worker) CreateEval(eval *structs.Evaluation) error { return w.evalRPC("Eval.Create", eval) }

// ReblockEval implements scheduler.Planner.
func (w *Worker) ReblockEval(eval *structs.Evaluation) error { return w.evalRPC("Eval.Reblock", eval) }

// planSize is how many allocations a plan places, updates or evicts.
func planSize(plan *structs.Plan) int {
	n := 0
	for _, m := range []map[string][]*structs.Allocation{plan.NodeAllocation, plan.NodeUpdate, plan.NodePreemptions} {
		for _, as := range m {
			n += len(as)
		}
	}
	return n
}
