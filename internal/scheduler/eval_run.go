package scheduler

import (
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/scheduler/feasible"
	"github.com/drover-project/drover/internal/structs"
)

// evalRun is the bookkeeping every scheduler keeps for one evaluation: the
// eval, the current pass's job, plan and placement context, and the outcome
// written back (blocked eval, failed groups, queued counts). The generic and
// system schedulers embed it, so both report outcomes the same way.
type evalRun struct {
	base    hclog.Logger
	logger  hclog.Logger
	clock   func() time.Time
	state   State
	planner Planner
	isStale func(*structs.Job) bool // Config.Superseded; nil: never

	eval       *structs.Evaluation
	job        *structs.Job
	plan       *structs.Plan
	planResult *structs.PlanResult
	ctx        *feasible.Context

	blocked        *structs.Evaluation
	failedTGAllocs map[string]*structs.AllocMetric
	queued         map[string]int
	// evalDeployment is the deployment the evaluation worked within (new
	// or active), recorded in its DeploymentID as Nomad does: tools follow
	// it from the evaluation.
	evalDeployment string
	// nextEval is the evaluation that continues this one's work (a system
	// job's next rolling-update batch), recorded in its NextEval.
	nextEval string
}

func newEvalRun(cfg Config, name string, state State, planner Planner) evalRun {
	return evalRun{base: cfg.Logger.Named(name), clock: cfg.Clock, state: state, planner: planner, isStale: cfg.Superseded}
}

// errSuperseded ends a pass whose job was purged, stopped or registered
// anew since the pass's snapshot: the change's own evaluation does the
// work, so this one is cancelled rather than finishing a stale, possibly
// huge, placement.
var errSuperseded = errors.New("job changed while it was being scheduled")

const supersededDesc = "cancelled: the job was updated, stopped or purged while this evaluation ran; a newer evaluation takes over"

// superseded reports whether the pass's job is no longer the job's current
// version (Config.Superseded). A pass for a purged job (nil) only stops
// allocations and is never cut short.
func (r *evalRun) superseded() bool {
	return r.isStale != nil && r.job != nil && r.isStale(r.job)
}

// start resets the run for eval.
func (r *evalRun) start(eval *structs.Evaluation) {
	r.eval = eval
	r.blocked = nil
	r.planResult = nil
	r.evalDeployment = ""
	r.nextEval = ""
	r.logger = r.base.With("eval_id", eval.ID, "job_id", eval.JobID, "namespace", eval.Namespace)
}

// beginPass loads the job (nil when purged) and starts an empty plan and a
// placement context on the current state for one pass.
func (r *evalRun) beginPass() error {
	job, err := r.state.JobByID(nil, r.eval.Namespace, r.eval.JobID)
	if err != nil {
		return fmt.Errorf("failed to get job %q: %w", r.eval.JobID, err)
	}
	r.job = job
	r.plan = r.eval.MakePlan(job)
	index, err := r.state.LatestIndex()
	if err != nil {
		return fmt.Errorf("failed to read state index: %w", err)
	}
	r.plan.SnapshotIndex = index
	r.failedTGAllocs = nil
	r.queued = make(map[string]int)
	if job != nil {
		for _, tg := range job.TaskGroups {
			r.queued[tg.Name] = 0
		}
	}
	// Seeded by the eval so concurrent schedulers diverge but a pass is
	// reproducible.
	h := fnv.New64a()
	h.Write([]byte(r.eval.ID))
	r.ctx = feasible.NewContext(r.state, r.plan, r.logger, h.Sum64(), index)
	return nil
}

// setStatus writes the eval's final status with the run's outcome.
func (r *evalRun) setStatus(status, desc string) error {
	e := r.eval.Copy()
	e.Status = status
	e.StatusDescription = desc
	e.QueuedAllocations = r.queued
	e.FailedTGAllocs = r.failedTGAllocs
	if r.blocked != nil {
		e.BlockedEval = r.blocked.ID
	}
	if r.evalDeployment != "" {
		e.DeploymentID = r.evalDeployment
	}
	if r.nextEval != "" {
		e.NextEval = r.nextEval
	}
	e.ModifyTime = r.clock().UnixNano()
	return r.planner.UpdateEval(e)
}

// reblock puts the blocked eval being processed back, with fresher
// eligibility and failure reasons than when it was first blocked.
func (r *evalRun) reblock() error {
	e := r.eval.Copy()
	if r.ctx != nil {
		e.ClassEligibility = r.ctx.Eligibility().Classes()
		e.EscapedComputedClass = r.ctx.Eligibility().HasEscaped()
	}
	e.QueuedAllocations = r.queued
	e.FailedTGAllocs = r.failedTGAllocs
	e.ModifyTime = r.clock().UnixNano()
	return r.planner.ReblockEval(e)
}

// needsReblock reports whether the eval being processed is a blocked one
// that still cannot place everything.
func (r *evalRun) needsReblock() bool {
	return r.eval.Status == structs.EvalStatusBlocked && len(r.failedTGAllocs) > 0
}

// newBlockedEval builds the blocked eval that keeps the unplaced work: it
// says which classes could help and, as Nomad's do, why it is blocked, so
// `eval status` on it shows the placement failures.
func (r *evalRun) newBlockedEval() *structs.Evaluation {
	now := r.clock().UnixNano()
	e := &structs.Evaluation{
		ID:                uuid.NewString(),
		Namespace:         r.eval.Namespace,
		Priority:          r.eval.Priority,
		Type:              r.eval.Type,
		TriggeredBy:       structs.EvalTriggerQueuedAllocs,
		JobID:             r.eval.JobID,
		JobModifyIndex:    r.eval.JobModifyIndex,
		Status:            structs.EvalStatusBlocked,
		StatusDescription: blockedEvalDesc,
		PreviousEval:      r.eval.ID,
		CreateTime:        now,
		ModifyTime:        now,
		FailedTGAllocs:    r.failedTGAllocs,
	}
	if r.ctx != nil {
		e.ClassEligibility = r.ctx.Eligibility().Classes()
		e.EscapedComputedClass = r.ctx.Eligibility().HasEscaped()
	}
	return e
}

// createBlocked records and writes a blocked eval.
func (r *evalRun) createBlocked(e *structs.Evaluation) error {
	r.blocked = e
	return r.planner.CreateEval(e)
}

// submit sends the pass's plan (unless it changes nothing) and says whether
// the eval is done: a partial commit retries on the refreshed state the
// planner returns.
func (r *evalRun) submit() (bool, error) {
	if r.plan.IsNoOp() && !r.eval.AnnotatePlan {
		return true, nil
	}
	result, newState, err := r.planner.SubmitPlan(r.plan)
	r.planResult = result
	if err != nil {
		return false, err
	}
	if result == nil {
		return false, errors.New("planner returned no plan result")
	}
	adjustQueued(r.queued, r.eval.ID, r.plan, result)
	if newState != nil {
		r.logger.Debug("refreshed state after partial commit; retrying")
		r.state = newState
		return false, nil
	}
	if full, expected, actual := result.FullCommit(r.plan); !full {
		r.logger.Debug("plan not fully committed; retrying", "expected", expected, "actual", actual)
		return false, nil
	}
	return true, nil
}
