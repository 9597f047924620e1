package scheduler

import (
	"errors"
	"fmt"

	"github.com/drover-project/drover/internal/scheduler/feasible"
	"github.com/drover-project/drover/internal/scheduler/reconcile"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
	"github.com/google/uuid"
)

// Attempt limits: how many passes without progress before giving up.
const (
	maxServiceAttempts = 5
	maxBatchAttempts   = 2
)

// Descriptions of evaluations this scheduler creates.
const (
	blockedEvalDesc        = "created to place remaining allocations"
	blockedEvalMaxPlanDesc = "created due to placement conflicts"
)

// GenericScheduler schedules service and batch jobs.
type GenericScheduler struct {
	evalRun
	algorithm string
	batch     bool
	preempt   bool
	oversub   bool
	explain   *feasible.Explain
	stack     *feasible.Stack

	// Per pass: the job's ready nodes (the stack's candidates), the
	// deployment placements join, and follow-up evaluations to create
	// with the plan.
	nodes        scopedNodes
	deploymentID string
	followups    []*structs.Evaluation
}

func newGenericScheduler(cfg Config, state State, planner Planner, batch bool) *GenericScheduler {
	jobType := structs.JobTypeService
	if batch {
		jobType = structs.JobTypeBatch
	}
	return &GenericScheduler{
		evalRun:   newEvalRun(cfg, "generic_sched", state, planner),
		preempt:   cfg.PreemptionEnabled[jobType],
		oversub:   cfg.MemoryOversubscription,
		algorithm: cfg.Algorithm,
		batch:     batch,
		explain:   cfg.Explain,
	}
}

// Process schedules one evaluation and records its outcome.
func (s *GenericScheduler) Process(eval *structs.Evaluation) error {
	s.start(eval)
	limit := maxServiceAttempts
	if s.batch {
		limit = maxBatchAttempts
	}
	progress := func() bool { return progressMade(s.planResult) }
	if err := retryMax(limit, s.process, progress); err != nil {
		if errors.Is(err, errSuperseded) {
			return s.setStatus(structs.EvalStatusCancelled, supersededDesc)
		}
		var statusErr *SetStatusError
		if !errors.As(err, &statusErr) {
			return err
		}
		// Out of attempts: leave a blocked eval so the work is not lost.
		if s.eval.Status != structs.EvalStatusBlocked && s.blocked == nil {
			if berr := s.createBlockedEval(true); berr != nil {
				s.logger.Error("failed to create blocked eval", "error", berr)
			}
		}
		return s.setStatus(statusErr.EvalStatus, err.Error())
	}

	if s.needsReblock() {
		return s.reblock()
	}
	return s.setStatus(structs.EvalStatusComplete, "")
}

func progressMade(r *structs.PlanResult) bool {
	return r != nil && (len(r.NodeUpdate) > 0 || len(r.NodeAllocation) > 0 ||
		len(r.NodePreemptions) > 0 || r.Deployment != nil || len(r.DeploymentUpdates) > 0)
}

func (s *GenericScheduler) createBlockedEval(planFailure bool) error {
	e := s.newBlockedEval()
	if planFailure {
		e.TriggeredBy = structs.EvalTriggerMaxPlans
		e.StatusDescription = blockedEvalMaxPlanDesc
	}
	return s.createBlocked(e)
}

// process is one scheduling pass. done=false asks for another pass.
func (s *GenericScheduler) process() (bool, error) {
	if err := s.beginPass(); err != nil {
		return false, err
	}
	job := s.job
	if s.explain != nil {
		s.ctx.SetExplain(s.explain)
	}
	s.stack = feasible.NewGenericStack(s.batch, s.algorithm, s.ctx)
	s.stack.SetPreemption(s.preempt)
	s.stack.SetMemoryOversubscription(s.oversub)
	s.nodes, s.deploymentID, s.followups = scopedNodes{}, "", nil
	if job != nil && !job.Stop {
		nodes, err := s.readyNodes(job)
		if err != nil {
			return false, err
		}
		s.nodes = nodes
		s.stack.SetScopedNodes(nodes.nodes, nodes.byDC)
		s.stack.SetJob(job)
	}

	if job != nil && s.superseded() {
		return false, errSuperseded
	}
	if err := s.computeJobAllocs(); err != nil {
		return false, err
	}

	if len(s.failedTGAllocs) > 0 && s.blocked == nil && s.eval.Status != structs.EvalStatusBlocked {
		if err := s.createBlockedEval(false); err != nil {
			return false, fmt.Errorf("failed to create blocked eval: %w", err)
		}
	}
	// Follow-ups are stored evaluations (WaitUntil in the future): they
	// outlive this server's leadership.
	for _, e := range s.followups {
		if err := s.planner.CreateEval(e); err != nil {
			return false, fmt.Errorf("failed to create follow-up eval: %w", err)
		}
	}

	return s.submit()
}

// adjustQueued decrements queued per group for every placement of plan
// (made by evalID) that result committed.
func adjustQueued(queued map[string]int, evalID string, plan *structs.Plan, result *structs.PlanResult) {
	placed := make(map[string]struct{})
	for _, allocs := range plan.NodeAllocation {
		for _, a := range allocs {
			placed[a.ID] = struct{}{}
		}
	}
	for _, allocs := range result.NodeAllocation {
		for _, a := range allocs {
			if _, ok := placed[a.ID]; ok && a.EvalID == evalID && queued[a.TaskGroup] > 0 {
				queued[a.TaskGroup]--
			}
		}
	}
}

// readyNodeSource is a state that memoises its ready nodes per version of
// the nodes table (*state.StateSnapshot): evaluations then share one scoped list
// instead of walking every node.
type readyNodeSource interface {
	ReadyNodes() (*state.ReadyNodeSet, error)
}

// scopedNodes are the ready nodes of one job scope with their count per
// datacenter; shared read-only between evaluations.
type scopedNodes struct {
	nodes []*structs.Node
	byDC  map[string]int
}

func (s *GenericScheduler) readyNodes(job *structs.Job) (scopedNodes, error) {
	if src, ok := s.state.(readyNodeSource); ok {
		set, err := src.ReadyNodes()
		if err != nil {
			return scopedNodes{}, fmt.Errorf("failed to list ready nodes: %w", err)
		}
		v := set.Derive(feasible.ScopeKey(job), func(ready []*structs.Node) any {
			nodes := feasible.ReadyNodes(ready, job)
			return scopedNodes{nodes: nodes, byDC: feasible.CountByDatacenter(nodes)}
		})
		return v.(scopedNodes), nil
	}
	iter, err := s.state.Nodes(nil)
	if err != nil {
		return scopedNodes{}, fmt.Errorf("failed to list nodes: %w", err)
	}
	var all []*structs.Node
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if n, ok := raw.(*structs.Node); ok {
			all = append(all, n)
		}
	}
	nodes := feasible.ReadyNodes(all, job)
	return scopedNodes{nodes: nodes, byDC: feasible.CountByDatacenter(nodes)}, nil
}

// taintedNodes returns the nodes of the job's live allocations that are
// gone (nil), down, disconnected or draining.
func (s *GenericScheduler) taintedNodes(allocs []*structs.Allocation) (map[string]*structs.Node, error) {
	out := make(map[string]*structs.Node)
	seen := make(map[string]struct{})
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		if _, ok := seen[a.NodeID]; ok {
			continue
		}
		seen[a.NodeID] = struct{}{}
		n, err := s.state.NodeByID(nil, a.NodeID)
		if err != nil {
			return nil, fmt.Errorf("failed to get node %q: %w", a.NodeID, err)
		}
		switch {
		case n == nil:
			out[a.NodeID] = nil
		case n.Status == structs.NodeStatusDown || n.Status == structs.NodeStatusDisconnected || n.DrainStrategy != nil:
			out[a.NodeID] = n
		}
	}
	return out, nil
}

func (s *GenericScheduler) computeJobAllocs() error {
	allocs, err := s.state.AllocsByJob(nil, s.eval.Namespace, s.eval.JobID, true)
	if err != nil {
		return fmt.Errorf("failed to get allocs of job %q: %w", s.eval.JobID, err)
	}
	tainted, err := s.taintedNodes(allocs)
	if err != nil {
		return err
	}
	var deployment *structs.Deployment
	if s.job != nil {
		if deployment, err = s.state.LatestDeploymentByJobID(nil, s.eval.Namespace, s.eval.JobID); err != nil {
			return fmt.Errorf("failed to get deployment of job %q: %w", s.eval.JobID, err)
		}
	}
	res := reconcile.Compute(reconcile.Input{
		Job: s.job, Batch: s.batch, Deployment: deployment, Allocs: allocs, TaintedNodes: tainted, Now: s.clock(),
		EvalID: s.eval.ID, EvalPriority: s.eval.Priority,
		Update: s.inplaceUpdate, NewID: uuid.NewString,
	})
	if s.eval.AnnotatePlan {
		s.plan.Annotations = &structs.PlanAnnotations{DesiredTGUpdates: res.DesiredTGUpdates}
	}
	s.plan.Deployment = res.Deployment
	s.plan.DeploymentUpdates = res.DeploymentUpdates
	s.deploymentID = res.DeploymentID
	s.evalDeployment = res.DeploymentID
	if s.evalDeployment == "" && deployment != nil && s.job != nil && deployment.JobCreateIndex == s.job.CreateIndex {
		// No deployment to work within: the evaluation still names the
		// job's latest one (done or not), as Nomad's does, so a tool
		// following it from the evaluation finds the rollout's outcome.
		s.evalDeployment = deployment.ID
	}
	s.followups = res.FollowupEvals
	for _, st := range res.Stop {
		s.plan.AppendStoppedAlloc(st.Alloc, st.Description, st.ClientStatus, st.FollowupEvalID)
	}
	// Attribute, disconnect and reconnect updates rewrite allocations
	// where they are, keeping the job version they run.
	for _, list := range [][]*structs.Allocation{res.AttributeUpdates, res.DisconnectUpdates, res.ReconnectUpdates} {
		for _, a := range list {
			a.EvalID = s.eval.ID
			s.plan.AppendAlloc(a)
		}
	}
	if s.job == nil || s.job.Stop {
		return nil
	}
	for _, a := range res.InPlace {
		a.EvalID = s.eval.ID
		if a.DeploymentID != s.deploymentID {
			// Joining another deployment: its health starts over.
			a.DeploymentID = s.deploymentID
			a.DeploymentStatus = nil
		}
		s.plan.AppendAlloc(a)
	}
	for _, d := range res.Destructive {
		s.queued[d.TaskGroup.Name]++
	}
	for _, p := range res.Place {
		s.queued[p.TaskGroup.Name]++
	}
	for _, f := range res.Fresh {
		s.queued[f.TaskGroup.Name] += f.Count
	}
	return s.computePlacements(res.Destructive, res.Place, res.Fresh)
}
