package scheduler

import (
	"errors"
	"fmt"
	"time"

	"github.com/drover-project/drover/internal/scheduler/feasible"
	"github.com/drover-project/drover/internal/scheduler/reconcile"
	"github.com/drover-project/drover/internal/structs"
	"github.com/google/uuid"
)

// Attempt limits of the system schedulers.
const (
	maxSystemAttempts   = 5
	maxSysBatchAttempts = 2
)

// SystemScheduler schedules system and sysbatch jobs: one allocation per
// task group on every eligible node, each placement checked against
// exactly its node (never ranked across nodes).
type SystemScheduler struct {
	evalRun
	sysbatch bool
	preempt  bool
	oversub  bool
	stack    *feasible.SystemStack

	// rolling is the follow-up eval of a rolling update held back by
	// update.max_parallel (created once per eval, whatever the retries).
	rolling        *structs.Evaluation
	rollingCreated bool
}

func newSystemScheduler(cfg Config, state State, planner Planner, sysbatch bool) *SystemScheduler {
	jobType := structs.JobTypeSystem
	if sysbatch {
		jobType = structs.JobTypeSysBatch
	}
	return &SystemScheduler{
		evalRun:  newEvalRun(cfg, "system_sched", state, planner),
		sysbatch: sysbatch,
		preempt:  cfg.PreemptionEnabled[jobType],
		oversub:  cfg.MemoryOversubscription,
	}
}

// Process schedules one evaluation and records its outcome.
func (s *SystemScheduler) Process(eval *structs.Evaluation) error {
	s.start(eval)
	s.rolling, s.rollingCreated = nil, false
	limit := maxSystemAttempts
	if s.sysbatch {
		limit = maxSysBatchAttempts
	}
	progress := func() bool { return progressMade(s.planResult) }
	if err := retryMax(limit, s.process, progress); err != nil {
		var statusErr *SetStatusError
		if !errors.As(err, &statusErr) {
			return err
		}
		return s.setStatus(statusErr.EvalStatus, err.Error())
	}
	if s.needsReblock() {
		return s.reblock()
	}
	return s.setStatus(structs.EvalStatusComplete, "")
}

// createBlockedEval leaves a blocked eval for the job, released when
// capacity changes in a node class that could take it. nodeID names the
// first node that lacked room.
func (s *SystemScheduler) createBlockedEval(nodeID string) error {
	e := s.newBlockedEval()
	e.NodeID = nodeID
	return s.createBlocked(e)
}

// process is one scheduling pass. done=false asks for another pass.
func (s *SystemScheduler) process() (bool, error) {
	if err := s.beginPass(); err != nil {
		return false, err
	}
	job := s.job
	s.stack = feasible.NewSystemStack(s.ctx)
	s.stack.SetPreemption(s.preempt)
	s.stack.SetMemoryOversubscription(s.oversub)
	if job != nil && !job.Stop {
		s.stack.SetJob(job)
	}

	firstExhausted, err := s.computeJobAllocs()
	if err != nil {
		return false, err
	}
	if s.rolling != nil && !s.rollingCreated {
		// Stored (WaitUntil in the future): it outlives this leader.
		if err := s.planner.CreateEval(s.rolling); err != nil {
			return false, fmt.Errorf("failed to create rolling-update eval: %w", err)
		}
		s.rollingCreated = true
		s.nextEval = s.rolling.ID
	}
	if len(s.failedTGAllocs) > 0 && s.blocked == nil && s.eval.Status != structs.EvalStatusBlocked {
		if err := s.createBlockedEval(firstExhausted); err != nil {
			return false, fmt.Errorf("failed to create blocked eval: %w", err)
		}
	}
	return s.submit()
}

func (s *SystemScheduler) allNodes() (map[string]*structs.Node, error) {
	iter, err := s.state.Nodes(nil)
	if err != nil {
		return nil, fmt.Errorf("failed to list nodes: %w", err)
	}
	out := make(map[string]*structs.Node)
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if n, ok := raw.(*structs.Node); ok {
			out[n.ID] = n
		}
	}
	return out, nil
}

// computeJobAllocs turns the node reconciler's result into the plan. It
// returns the ID of the first node that lacked room, if any.
func (s *SystemScheduler) computeJobAllocs() (string, error) {
	allocs, err := s.state.AllocsByJob(nil, s.eval.Namespace, s.eval.JobID, true)
	if err != nil {
		return "", fmt.Errorf("failed to get allocs of job %q: %w", s.eval.JobID, err)
	}
	nodes, err := s.allNodes()
	if err != nil {
		return "", err
	}
	res := reconcile.ComputeNodes(reconcile.NodeInput{
		Job: s.job, Sysbatch: s.sysbatch, Allocs: allocs, Nodes: nodes,
	})
	if s.eval.AnnotatePlan {
		s.plan.Annotations = &structs.PlanAnnotations{DesiredTGUpdates: res.DesiredTGUpdates}
	}
	for _, st := range res.Stop {
		s.plan.AppendStoppedAlloc(st.Alloc, st.Description, st.ClientStatus, "")
	}
	if s.job == nil || s.job.Stop {
		return "", nil
	}
	for _, d := range res.Destructive {
		s.queued[d.TaskGroup.Name]++
	}
	for _, p := range res.Place {
		s.queued[p.TaskGroup.Name]++
	}

	now := s.clock()
	destructive, held, wait := s.rollingLimit(res.Destructive)
	if len(held) > 0 && s.rolling == nil {
		s.rolling = s.rollingFollowup(now, wait)
	}
	for _, d := range held {
		s.queued[d.TaskGroup.Name]-- // waits for the next batch
	}
	var firstExhausted string
	noteFailure := func(nodeID string, failed bool) {
		if failed && firstExhausted == "" {
			firstExhausted = nodeID
		}
	}
	for _, d := range destructive {
		// The old alloc is stopped in the same plan, so its resources
		// are free for the new one.
		s.plan.AppendStoppedAlloc(d.Old, reconcile.DescUpdating, "", "")
		placed, failed := s.place(d.TaskGroup, d.Name, d.Node, d.Old, now)
		if !placed {
			// Keep the old version running rather than leave a hole.
			s.plan.PopUpdate(d.Old)
		}
		noteFailure(d.Node.ID, failed)
	}
	for _, p := range res.Place {
		_, failed := s.place(p.TaskGroup, p.Name, p.Node, nil, now)
		noteFailure(p.Node.ID, failed)
	}
	return firstExhausted, nil
}

// place checks tg against exactly node and adds the allocation to the
// plan. A node filtered by constraints or drivers is not a failure: it is
// simply not part of the job and leaves the queue. A feasible node
// without room is recorded in FailedTGAllocs (failed=true).
func (s *SystemScheduler) place(tg *structs.TaskGroup, name string, node *structs.Node, prev *structs.Allocation, now time.Time) (placed, failed bool) {
	option := s.stack.Select(tg, node)
	metrics := s.ctx.Metrics()
	if option == nil {
		if metrics.NodesFiltered > 0 {
			if s.queued[tg.Name] > 0 {
				s.queued[tg.Name]--
			}
			return false, false
		}
		if s.failedTGAllocs == nil {
			s.failedTGAllocs = make(map[string]*structs.AllocMetric)
		}
		if m, ok := s.failedTGAllocs[tg.Name]; ok {
			m.CoalescedFailures++
			m.NodesEvaluated += metrics.NodesEvaluated
			m.NodesExhausted += metrics.NodesExhausted
			for dim, n := range metrics.DimensionExhausted {
				if m.DimensionExhausted == nil {
					m.DimensionExhausted = make(map[string]int)
				}
				m.DimensionExhausted[dim] += n
			}
		} else {
			s.failedTGAllocs[tg.Name] = metrics
		}
		return false, true
	}
	alloc := &structs.Allocation{
		ID:                 uuid.NewString(),
		Namespace:          s.job.Namespace,
		EvalID:             s.eval.ID,
		Name:               name,
		NodeID:             node.ID,
		NodeName:           node.Name,
		JobID:              s.job.ID,
		Job:                s.job,
		TaskGroup:          tg.Name,
		AllocatedResources: allocatedResources(tg, option),
		Metrics:            metrics,
		DesiredStatus:      structs.AllocDesiredStatusRun,
		ClientStatus:       structs.AllocClientStatusPending,
		CreateTime:         now.UnixNano(),
		ModifyTime:         now.UnixNano(),
	}
	if prev != nil {
		alloc.PreviousAllocation = prev.ID
	}
	for _, victim := range option.Preempted {
		s.plan.AppendPreemptedAlloc(victim, alloc.ID)
		alloc.PreemptedAllocations = append(alloc.PreemptedAllocations, victim.ID)
	}
	s.plan.AppendAlloc(alloc)
	return true, false
}

// rollingLimit keeps, of the destructive updates (in node order), at most
// each group's update.max_parallel for this pass, as Nomad's system
// scheduler does; the rest (held) wait for a rolling-update eval after
// the shortest stagger of their groups (wait). Groups without a rolling
// update strategy replace everything at once.
func (s *SystemScheduler) rollingLimit(all []reconcile.NodeDestructive) (keep, held []reconcile.NodeDestructive, wait time.Duration) {
	taken := map[string]int{}
	for _, d := range all {
		u := d.TaskGroup.Update
		if u == nil && s.job != nil {
			u = s.job.Update
		}
		if u == nil || u.MaxParallel == nil || *u.MaxParallel <= 0 || taken[d.TaskGroup.Name] < *u.MaxParallel {
			taken[d.TaskGroup.Name]++
			keep = append(keep, d)
			continue
		}
		held = append(held, d)
		stagger := 30 * time.Second
		if u.Stagger != nil && *u.Stagger > 0 {
			stagger = *u.Stagger
		}
		if wait == 0 || stagger < wait {
			wait = stagger
		}
	}
	return keep, held, wait
}

// rollingFollowup is the eval that continues a held-back rolling update.
func (s *SystemScheduler) rollingFollowup(now time.Time, wait time.Duration) *structs.Evaluation {
	return &structs.Evaluation{
		ID: uuid.NewString(), Namespace: s.eval.Namespace, Priority: s.job.Priority, Type: s.job.Type,
		TriggeredBy: structs.EvalTriggerRollingUpdate, JobID: s.job.ID, JobModifyIndex: s.job.JobModifyIndex,
		Status: structs.EvalStatusPending, WaitUntil: now.Add(wait), PreviousEval: s.eval.ID,
		StatusDescription: "rolling update: next batch after update.stagger",
		CreateTime:        now.UnixNano(), ModifyTime: now.UnixNano(),
	}
}
