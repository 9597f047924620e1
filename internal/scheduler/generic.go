package scheduler

import (
	"errors"
	"fmt"
	"time"

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
	if job != nil && !job.Stop {
		nodes, err := s.readyNodes(job)
		if err != nil {
			return false, err
		}
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
	res := reconcile.Compute(reconcile.Input{
		Job: s.job, Batch: s.batch, Allocs: allocs, TaintedNodes: tainted, Now: s.clock(),
	})
	if s.eval.AnnotatePlan {
		s.plan.Annotations = &structs.PlanAnnotations{DesiredTGUpdates: res.DesiredTGUpdates}
	}
	for _, st := range res.Stop {
		s.plan.AppendStoppedAlloc(st.Alloc, st.Description, st.ClientStatus, "")
	}
	if s.job == nil || s.job.Stop {
		return nil
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

// supersededEvery is how many placements a pass makes between two checks
// that its job is still current (Config.Superseded).
const supersededEvery = 64

// computePlacements places destructive replacements first (their old
// allocs are stopped in the same plan, so their resources are free), then
// replacement allocations, then new ones. New allocations of a group are
// named as they are placed and the group's first failure ends them: the
// rest cannot fit either (the plan only grows), so they are counted as
// coalesced failures without being built or tried. It returns
// errSuperseded when the job changed under the pass.
func (s *GenericScheduler) computePlacements(destructive []reconcile.Destructive, place []reconcile.Placement, fresh []reconcile.Fresh) error {
	now := s.clock()
	tries := 0
	check := func() error {
		if tries++; tries%supersededEvery == 0 && s.superseded() {
			return errSuperseded
		}
		return nil
	}
	for _, d := range destructive {
		if err := check(); err != nil {
			return err
		}
		s.plan.AppendStoppedAlloc(d.Old, reconcile.DescUpdating, "", "")
		if !s.place(d.TaskGroup, d.Name, d.Old, false, now) {
			// Keep the old version running rather than leave a hole.
			s.plan.PopUpdate(d.Old)
		}
	}
	for _, p := range place {
		if err := check(); err != nil {
			return err
		}
		if p.Reschedule {
			s.plan.AppendStoppedAlloc(p.PreviousAlloc, reconcile.DescRescheduled, "", "")
		}
		if !s.place(p.TaskGroup, p.Name, p.PreviousAlloc, p.Reschedule, now) && p.Reschedule {
			s.plan.PopUpdate(p.PreviousAlloc)
		}
	}
	for _, f := range fresh {
		placed := 0
		for name := range f.Names() {
			if err := check(); err != nil {
				return err
			}
			if !s.place(f.TaskGroup, name, nil, false, now) {
				s.failedTGAllocs[f.TaskGroup.Name].CoalescedFailures += f.Count - placed - 1
				break
			}
			placed++
		}
	}
	return nil
}

// place selects a node for one allocation and adds it to the plan. It
// records failures in FailedTGAllocs and reports whether it placed.
func (s *GenericScheduler) place(tg *structs.TaskGroup, name string, prev *structs.Allocation, reschedule bool, now time.Time) bool {
	var opts *feasible.SelectOptions
	if reschedule && prev != nil {
		opts = &feasible.SelectOptions{PenaltyNodeIDs: map[string]struct{}{prev.NodeID: {}}}
	}
	start := s.clock()
	option := s.stack.Select(tg, opts)
	metrics := s.ctx.Metrics()
	metrics.AllocationTime = s.clock().Sub(start)
	if option == nil {
		if s.failedTGAllocs == nil {
			s.failedTGAllocs = make(map[string]*structs.AllocMetric)
		}
		if m, ok := s.failedTGAllocs[tg.Name]; ok {
			m.CoalescedFailures++
		} else {
			s.failedTGAllocs[tg.Name] = metrics
		}
		return false
	}
	res := allocatedResources(tg, option)
	alloc := &structs.Allocation{
		ID:                 uuid.NewString(),
		Namespace:          s.job.Namespace,
		EvalID:             s.eval.ID,
		Name:               name,
		NodeID:             option.Node.ID,
		NodeName:           option.Node.Name,
		JobID:              s.job.ID,
		Job:                s.job,
		TaskGroup:          tg.Name,
		AllocatedResources: res,
		Metrics:            metrics,
		DesiredStatus:      structs.AllocDesiredStatusRun,
		ClientStatus:       structs.AllocClientStatusPending,
		CreateTime:         now.UnixNano(),
		ModifyTime:         now.UnixNano(),
	}
	if prev != nil {
		alloc.PreviousAllocation = prev.ID
		if reschedule {
			alloc.RescheduleTracker = structs.NextRescheduleTracker(prev, structs.ReschedulePolicyOf(s.job, tg.Name), now)
		}
	}
	for _, victim := range option.Preempted {
		s.plan.AppendPreemptedAlloc(victim, alloc.ID)
		alloc.PreemptedAllocations = append(alloc.PreemptedAllocations, victim.ID)
	}
	s.plan.AppendAlloc(alloc)
	return true
}

// allocatedResources is what a placement of tg on option receives.
func allocatedResources(tg *structs.TaskGroup, option *feasible.RankedNode) *structs.AllocatedResources {
	res := &structs.AllocatedResources{Tasks: option.TaskResources, Shared: option.Shared}
	for _, t := range tg.Tasks {
		if t.Lifecycle != nil {
			if res.TaskLifecycles == nil {
				res.TaskLifecycles = make(map[string]*structs.TaskLifecycle)
			}
			res.TaskLifecycles[t.Name] = t.Lifecycle
		}
	}
	return res
}
