package server

import (
	"slices"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"

	"github.com/drover-project/drover/internal/structs"
)

// Plan is the RPC endpoint schedulers submit plans to.
type Plan struct{ srv *Server }

// Submit queues a plan for the leader's applier and waits for the result.
func (p *Plan) Submit(args *structs.PlanRequest, reply *structs.PlanResponse) error {
	if done, err := p.srv.forward("Plan.Submit", args.Region, false, args, reply); done {
		return err
	}
	plan := args.Plan
	if plan == nil {
		return structs.NewErrCoded(400, "cannot submit nil plan")
	}
	defer metrics.MeasureSince(keyPlanSubmit, time.Now())
	// The plan may wait in the queue; its eval must not be redelivered
	// meanwhile.
	if err := p.srv.broker.PauseNackTimeout(plan.EvalID, plan.EvalToken); err != nil {
		return err
	}
	defer p.srv.broker.ResumeNackTimeout(plan.EvalID, plan.EvalToken)
	pending, err := p.srv.planQueue.Enqueue(plan)
	if err != nil {
		return err
	}
	result, err := pending.Wait()
	if err != nil {
		return err
	}
	reply.Result = result
	reply.Index = result.AllocIndex
	return nil
}

// planApply runs the leader's plan applier until stopCh closes. Many
// schedulers propose concurrently; the applier re-checks every touched node
// against the newest state (resources and a freshly built port index) plus
// the plans still committing, and commits only what fits (plan_pipeline.go).
func (s *Server) planApply(stopCh chan struct{}) {
	// A previous term's applier may still be finishing a batch: two appliers
	// must never verify concurrently.
	s.planApplyMu.Lock()
	defer s.planApplyMu.Unlock()
	a := &planApplier{queue: s.planQueue, store: s.State, submit: s.submitPlanResults, takeEvals: s.evalUpdates.take,
		committed: &s.lastCommittedPlanIndex, logger: s.logger.Named("plan_apply")}
	a.run(stopCh)
}

// submitPlanResults writes the plans, and the evaluation updates riding
// with them, as one Raft entry without waiting.
func (s *Server) submitPlanResults(reqs []*structs.ApplyPlanResultsRequest, evals []*structs.Evaluation) planCommit {
	if len(reqs) == 1 && len(evals) == 0 {
		return s.raftApplyAsync(structs.ApplyPlanResultsRequestType, reqs[0])
	}
	return s.raftApplyAsync(structs.ApplyPlanResultsBatchRequestType,
		&structs.ApplyPlanResultsBatchRequest{Plans: reqs, EvalUpdates: evals})
}

func isEmptyResult(r *structs.PlanResult) bool {
	return len(r.NodeUpdate) == 0 && len(r.NodeAllocation) == 0 && len(r.NodePreemptions) == 0 &&
		r.Deployment == nil && len(r.DeploymentUpdates) == 0
}

func planResultRequest(plan *structs.Plan, result *structs.PlanResult) *structs.ApplyPlanResultsRequest {
	now := time.Now().UnixNano()
	req := &structs.ApplyPlanResultsRequest{Job: plan.Job, Deployment: result.Deployment,
		DeploymentUpdates: result.DeploymentUpdates, EvalID: plan.EvalID, UpdatedAt: now}
	for _, allocs := range result.NodeAllocation {
		for _, a := range allocs {
			if a.CreateTime == 0 {
				a.CreateTime = now
			}
			a.ModifyTime = now
			if a.Job != nil && sameJobVersion(a.Job, plan.Job) {
				// The entry carries the job once (req.Job); the FSM attaches
				// it to each placement by pointer. Serialising it per alloc
				// made every placement decode into its own copy of the job.
				c := *a
				c.Job = nil
				a = &c
			}
			req.Alloc = append(req.Alloc, a)
		}
	}
	for _, allocs := range result.NodeUpdate {
		for _, a := range allocs {
			a.ModifyTime = now
			req.AllocsStopped = append(req.AllocsStopped, a)
		}
	}
	for _, allocs := range result.NodePreemptions {
		for _, a := range allocs {
			a.ModifyTime = now
			req.AllocsPreempted = append(req.AllocsPreempted, a)
		}
	}
	return req
}

// sameJobVersion reports whether a and b are the same version of one job
// (the same pointer for plans from this server's workers).
func sameJobVersion(a, b *structs.Job) bool {
	if a == b {
		return true
	}
	return b != nil && a.Namespace == b.Namespace && a.ID == b.ID && a.Version == b.Version &&
		a.JobModifyIndex == b.JobModifyIndex && a.CreateIndex == b.CreateIndex && a.ModifyIndex == b.ModifyIndex
}

// evaluatePlan decides per node what of the plan can be committed.
func evaluatePlan(view *planView, plan *structs.Plan) (*structs.PlanResult, error) {
	result := &structs.PlanResult{
		NodeUpdate:        map[string][]*structs.Allocation{},
		NodeAllocation:    map[string][]*structs.Allocation{},
		NodePreemptions:   map[string][]*structs.Allocation{},
		Deployment:        plan.Deployment,
		DeploymentUpdates: plan.DeploymentUpdates,
	}
	nodes := map[string]struct{}{}
	for n := range plan.NodeUpdate {
		nodes[n] = struct{}{}
	}
	for n := range plan.NodeAllocation {
		nodes[n] = struct{}{}
	}
	for n := range plan.NodePreemptions {
		nodes[n] = struct{}{}
	}
	for nodeID := range nodes {
		fit, reason, err := evaluateNodePlan(view, plan, nodeID)
		if err != nil {
			return nil, err
		}
		if !fit {
			result.RejectedNodes = append(result.RejectedNodes, nodeID)
			_ = reason
			if plan.AllAtOnce {
				result.NodeUpdate = map[string][]*structs.Allocation{}
				result.NodeAllocation = map[string][]*structs.Allocation{}
				result.NodePreemptions = map[string][]*structs.Allocation{}
				result.Deployment, result.DeploymentUpdates = nil, nil
				break
			}
			continue
		}
		if l := plan.NodeUpdate[nodeID]; len(l) > 0 {
			result.NodeUpdate[nodeID] = l
		}
		if l := plan.NodeAllocation[nodeID]; len(l) > 0 {
			result.NodeAllocation[nodeID] = l
		}
		if l := plan.NodePreemptions[nodeID]; len(l) > 0 {
			result.NodePreemptions[nodeID] = l
		}
	}
	if len(result.RejectedNodes) > 0 {
		result.RefreshIndex = maxIndex(view.snap, "allocs", "nodes")
	}
	return result, nil
}

// evaluateNodePlan checks one node: it must exist, be ready (and eligible for
// new work), and fit everything it would run, ports included.
func evaluateNodePlan(view *planView, plan *structs.Plan, nodeID string) (bool, string, error) {
	placing := plan.NodeAllocation[nodeID]
	if len(placing) == 0 {
		return true, "", nil // stops and evictions always apply
	}
	if ok, err := attributeUpdatesOnly(view, nodeID, placing); err != nil || ok {
		return ok, "", err
	}
	node, err := view.snap.NodeByID(nil, nodeID)
	if err != nil {
		return false, "", err
	}
	if node == nil {
		return false, "node does not exist", nil
	}
	if node.Status != structs.NodeStatusReady {
		return false, "node is not ready for placements", nil
	}
	if fit, dim, done, err := evaluateNodeTotals(view, plan, node, placing); done || err != nil {
		return fit, dim, err
	}
	return evaluateNodeExact(view, plan, node, placing)
}

// attributeUpdatesOnly reports whether everything the plan puts on the node
// rewrites allocations already there that claim nothing more: finished ones
// (a follow-up eval ID for a delayed reschedule) or ones being marked unknown
// (their node disconnected). Those land whatever the node's status or room,
// as Nomad lets them.
func attributeUpdatesOnly(view *planView, nodeID string, placing []*structs.Allocation) (bool, error) {
	for _, a := range placing {
		ex, err := view.allocByID(a.ID)
		if err != nil {
			return false, err
		}
		if ex == nil || ex.NodeID != nodeID {
			return false, nil
		}
		if !ex.ClientTerminalStatus() && a.ClientStatus != structs.AllocClientStatusUnknown {
			return false, nil
		}
	}
	return true, nil
}

// evaluateNodeExact decides a node's part of the plan with AllocsFit over
// the allocations the node would hold.
func evaluateNodeExact(view *planView, plan *structs.Plan, node *structs.Node, placing []*structs.Allocation) (bool, string, error) {
	nodeID := node.ID
	existing, err := view.allocsOnNode(nodeID)
	if err != nil {
		return false, "", err
	}
	if node.SchedulingEligibility != structs.NodeSchedulingEligible || node.DrainStrategy != nil {
		// Only updates of allocations already here may land.
		have := make(map[string]bool, len(existing))
		for _, a := range existing {
			have[a.ID] = true
		}
		for _, a := range placing {
			if !have[a.ID] {
				return false, "node is not eligible", nil
			}
		}
	}
	remove := map[string]bool{}
	for _, a := range plan.NodeUpdate[nodeID] {
		remove[a.ID] = true
	}
	for _, a := range plan.NodePreemptions[nodeID] {
		remove[a.ID] = true
	}
	for _, a := range placing {
		remove[a.ID] = true
	}
	proposed := make([]*structs.Allocation, 0, len(existing)+len(placing))
	for _, a := range existing {
		if !remove[a.ID] {
			proposed = append(proposed, a)
		}
	}
	proposed = append(proposed, placing...)
	fit, dim, _, err := structs.AllocsFit(node, proposed, nil)
	if err != nil {
		return false, "", err
	}
	return fit, dim, nil
}

// evaluateNodeTotals decides a node's part of the plan from the sums of
// the allocations on it, as AllocsFit would decide it, when nothing on the
// node (in the snapshot, in plans verified ahead of this one) or in the
// plan for it holds ports or devices: the node's allocations and their
// sums come from the state's per-node memo, shared with the schedulers,
// and are adjusted by the plans ahead and this plan's stops and
// placements, instead of being read and summed again for every plan. done
// is false when the exact check must run.
func evaluateNodeTotals(view *planView, plan *structs.Plan, node *structs.Node, placing []*structs.Allocation) (fit bool, dim string, done bool, err error) {
	live, err := view.liveAllocs(node.ID)
	if err != nil {
		return false, "", false, err
	}
	u := live.Usage()
	if u.Ports || u.Devices {
		return false, "", false, nil
	}
	inState := func(id string) *structs.Allocation {
		if i := slices.IndexFunc(live.Allocs, func(a *structs.Allocation) bool { return a.ID == id }); i >= 0 {
			return live.Allocs[i]
		}
		return nil
	}
	// What plans ahead of this one changed on the node.
	over := view.overrides(node.ID)
	for id, a := range over {
		u.Remove(inState(id))
		u.Add(a)
	}
	current := func(id string) *structs.Allocation {
		if a, ok := over[id]; ok {
			return a
		}
		return inState(id)
	}
	eligible := node.SchedulingEligibility == structs.NodeSchedulingEligible && node.DrainStrategy == nil
	for _, a := range placing {
		if !eligible && current(a.ID) == nil {
			// Only updates of allocations already here may land.
			return false, "node is not eligible", true, nil
		}
	}
	// This plan's stops, evictions and replaced allocations free theirs.
	removed := make(map[string]struct{}, len(placing))
	for _, list := range [][]*structs.Allocation{plan.NodeUpdate[node.ID], plan.NodePreemptions[node.ID], placing} {
		for _, a := range list {
			if _, ok := removed[a.ID]; !ok {
				removed[a.ID] = struct{}{}
				u.Remove(current(a.ID))
			}
		}
	}
	for _, a := range placing {
		u.Add(a)
	}
	if u.Ports || u.Devices {
		return false, "", false, nil
	}
	if fit, dim := u.FitsTotals(node); !fit {
		return false, dim, true, nil
	}
	if err := structs.NodeNetworkErr(node); err != nil {
		return false, "", true, err
	}
	return true, "", true, nil
}

// preemptionEvals makes one "preemption" eval per job that lost allocations
// to this plan, written in the same entry as the evictions, so the evicted
// work is placed again (elsewhere, or blocked until capacity returns).
func preemptionEvals(view *planView, result *structs.PlanResult) []*structs.Evaluation {
	now := time.Now().UnixNano()
	seen := map[structs.NamespacedID]bool{}
	var evals []*structs.Evaluation
	for _, allocs := range result.NodePreemptions {
		for _, a := range allocs {
			job := a.Job
			if job == nil {
				if existing, err := view.allocByID(a.ID); err == nil && existing != nil {
					job = existing.Job
				}
			}
			if job == nil {
				continue
			}
			key := structs.NamespacedID{Namespace: job.Namespace, ID: job.ID}
			if seen[key] {
				continue
			}
			seen[key] = true
			evals = append(evals, &structs.Evaluation{ID: newID(), Namespace: job.Namespace, Priority: job.Priority,
				Type: job.Type, TriggeredBy: structs.EvalTriggerPreemption, JobID: job.ID,
				JobModifyIndex: job.JobModifyIndex, Status: structs.EvalStatusPending, CreateTime: now, ModifyTime: now})
		}
	}
	return evals
}
