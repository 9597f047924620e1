package scheduler

import (
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/scheduler/feasible"
	"github.com/drover-project/drover/internal/scheduler/reconcile"
	"github.com/drover-project/drover/internal/structs"
)

// supersededEvery is how many placements a pass makes between two checks
// that its job is still current (Config.Superseded).
const supersededEvery = 64

// computePlacements places destructive replacements first (their old
// allocs are stopped in the same plan, so their resources are free), then
// replacement allocations and canaries, then new ones. New allocations of
// a group are named as they are placed and the group's first failure ends
// them: the rest cannot fit either (the plan only grows), so they are
// counted as coalesced failures without being built or tried. It returns
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
		if !s.place(placement{tg: d.TaskGroup, name: d.Name, prev: d.Old}, now) {
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
		pl := placement{tg: p.TaskGroup, name: p.Name, prev: p.PreviousAlloc, reschedule: p.Reschedule, canary: p.Canary, job: p.Job}
		if !s.place(pl, now) && p.Reschedule {
			s.plan.PopUpdate(p.PreviousAlloc)
		}
	}
	for _, f := range fresh {
		placed := 0
		for name := range f.Names() {
			if err := check(); err != nil {
				return err
			}
			if !s.place(placement{tg: f.TaskGroup, name: name}, now) {
				s.failedTGAllocs[f.TaskGroup.Name].CoalescedFailures += f.Count - placed - 1
				break
			}
			placed++
		}
	}
	return nil
}

// placement is one allocation to place.
type placement struct {
	tg         *structs.TaskGroup
	name       string
	prev       *structs.Allocation // the allocation it replaces, if any
	reschedule bool                // prev failed: extend its tracker, avoid its node
	canary     bool
	job        *structs.Job // an older version to place; nil: the current job
}

// place selects a node for one allocation and adds it to the plan. It
// records failures in FailedTGAllocs and reports whether it placed.
// Placements join the pass's deployment; a canary is marked as one.
func (s *GenericScheduler) place(p placement, now time.Time) bool {
	job, tg := s.job, p.tg
	if p.job != nil {
		if old := p.job.LookupTaskGroup(p.tg.Name); old != nil {
			job, tg = p.job, old
		}
	}
	opts := &feasible.SelectOptions{AllocName: p.name}
	if p.reschedule && p.prev != nil {
		opts.PenaltyNodeIDs = map[string]struct{}{p.prev.NodeID: {}}
	}
	if n := s.preferredNode(job, tg, p.prev); n != nil {
		if opts == nil {
			opts = &feasible.SelectOptions{}
		}
		opts.PreferredNode = n
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
		Name:               p.name,
		NodeID:             option.Node.ID,
		NodeName:           option.Node.Name,
		JobID:              s.job.ID,
		Job:                job,
		TaskGroup:          tg.Name,
		AllocatedResources: res,
		Metrics:            metrics,
		DesiredStatus:      structs.AllocDesiredStatusRun,
		ClientStatus:       structs.AllocClientStatusPending,
		DeploymentID:       s.deploymentID,
		CreateTime:         now.UnixNano(),
		ModifyTime:         now.UnixNano(),
	}
	if p.canary && s.deploymentID != "" {
		alloc.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	}
	if p.prev != nil {
		alloc.PreviousAllocation = p.prev.ID
		if p.reschedule {
			alloc.RescheduleTracker = structs.NextRescheduleTracker(p.prev, structs.ReschedulePolicyOf(job, tg.Name), now)
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

// preferredNode is the node a replacement of prev should be tried on
// first: prev's node when the group's ephemeral disk is sticky (or
// migrates, which implies sticky) and that node can still take the job's
// placements. Nil: no preference.
func (s *GenericScheduler) preferredNode(job *structs.Job, tg *structs.TaskGroup, prev *structs.Allocation) *structs.Node {
	if prev == nil || prev.NodeID == "" || !tg.EphemeralDisk.StickyOrMigrate() {
		return nil
	}
	n, err := s.state.NodeByID(nil, prev.NodeID)
	if err != nil || n == nil || !n.Ready() || !feasible.InJobScope(n, job) {
		return nil
	}
	return n
}
