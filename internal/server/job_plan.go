package server

import (
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/scheduler"
	"github.com/drover-project/drover/internal/scheduler/feasible"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Plan runs the scheduler against a private copy of the state with the new
// job version in it and reports what would happen. Nothing is written.
func (j *Job) Plan(args *structs.JobPlanRequest, reply *structs.JobPlanResponse) error {
	if done, err := j.srv.forward("Job.Plan", args.Region, false, args, reply); done {
		return err
	}
	if err := j.srv.authorizeNS(args.AuthToken, jobNamespace(args.Job, args.Namespace), acl.NamespaceCapabilitySubmitJob); err != nil {
		return err
	}
	if err := j.srv.admitNamespace(args.Job); err != nil {
		return err
	}
	warnings, err := admitJob(args.Job)
	if err != nil {
		return err
	}
	if err := j.srv.checkJobLimits(args.Job); err != nil {
		return err
	}
	reply.Warnings = warnings
	job := args.Job
	// A private copy: the candidate version is written into it only.
	snap, err := j.srv.State().Scratch()
	if err != nil {
		return err
	}
	existing, err := snap.JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	latest, err := snap.LatestIndex()
	if err != nil {
		return err
	}
	if existing != nil {
		reply.JobModifyIndex = existing.JobModifyIndex
	}
	job.SetScalingTargets()
	job.AssignScalingPolicyIDs(existing, newID)
	// Write the candidate version into the private copy only.
	idx := latest + 1
	job.SubmitTime = time.Now().UnixNano()
	if existing == nil || job.SpecChanged(existing) || existing.Stop {
		if err := snap.UpsertJob(idx, nil, job); err != nil {
			return err
		}
	}
	now := time.Now().UnixNano()
	eval := &structs.Evaluation{ID: newID(), Namespace: job.Namespace, Priority: job.Priority, Type: job.Type,
		TriggeredBy: structs.EvalTriggerJobRegister, JobID: job.ID, JobModifyIndex: idx,
		Status: structs.EvalStatusPending, AnnotatePlan: true, CreateTime: now, ModifyTime: now}
	planner := &dryRunPlanner{}
	var explain *feasible.Explain
	if args.Explain {
		explain = feasible.NewExplain()
	}
	if !job.IsPeriodic() && !job.IsParameterized() {
		sched, err := scheduler.NewScheduler(job.Type, j.srv.schedulerOptions(scheduler.Config{Logger: j.srv.logger.Named("plan"),
			Clock: time.Now, Explain: explain}, snap, job.Namespace, job.ID), snap, planner)
		if err != nil {
			return err
		}
		if err := sched.Process(eval); err != nil {
			return err
		}
	}
	if planner.eval != nil {
		reply.FailedTGAllocs = planner.eval.FailedTGAllocs
	}
	reply.CreatedEvals = planner.created
	reply.Annotations = annotate(snap, job, planner.plans)
	if reply.Explain, err = planExplain(explain, snap, job, planner.plans, args.ExplainAll); err != nil {
		return err
	}
	if args.Diff {
		reply.Diff = jobDiff(existing, job, reply.Annotations)
	}
	reply.Index = idx - 1
	return nil
}

// dryRunPlanner records what the scheduler would do and commits everything.
type dryRunPlanner struct {
	plans   []*structs.Plan
	eval    *structs.Evaluation
	created []*structs.Evaluation
}

func (p *dryRunPlanner) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	p.plans = append(p.plans, plan)
	return &structs.PlanResult{NodeUpdate: plan.NodeUpdate, NodeAllocation: plan.NodeAllocation,
		NodePreemptions: plan.NodePreemptions, Deployment: plan.Deployment,
		DeploymentUpdates: plan.DeploymentUpdates}, nil, nil
}

func (p *dryRunPlanner) UpdateEval(e *structs.Evaluation) error { p.eval = e; return nil }

func (p *dryRunPlanner) CreateEval(e *structs.Evaluation) error {
	p.created = append(p.created, e)
	return nil
}

func (p *dryRunPlanner) ReblockEval(e *structs.Evaluation) error { p.eval = e; return nil }

// annotate is what the plan will do per task group: the reconciler's
// counts when the scheduler annotated its first plan (canaries, in-place
// updates, and the destructive updates a rolling update holds back as
// ignored, as Nomad's job plan shows them), else counted from the plans.
func annotate(snap *state.StateStore, job *structs.Job, plans []*structs.Plan) *structs.PlanAnnotations {
	if len(plans) > 0 && plans[0].Annotations != nil && plans[0].Annotations.DesiredTGUpdates != nil {
		out := &structs.PlanAnnotations{DesiredTGUpdates: map[string]*api.DesiredUpdates{}}
		for tg, d := range plans[0].Annotations.DesiredTGUpdates {
			c := *d
			out.DesiredTGUpdates[tg] = &c
		}
		for _, tg := range job.TaskGroups {
			if out.DesiredTGUpdates[tg.Name] == nil {
				out.DesiredTGUpdates[tg.Name] = &api.DesiredUpdates{}
			}
		}
		return out
	}
	return annotateFromPlans(snap, job, plans)
}

// annotateFromPlans counts per task group what the plans do.
func annotateFromPlans(snap *state.StateStore, job *structs.Job, plans []*structs.Plan) *structs.PlanAnnotations {
	out := &structs.PlanAnnotations{DesiredTGUpdates: map[string]*api.DesiredUpdates{}}
	for _, tg := range job.TaskGroups {
		out.DesiredTGUpdates[tg.Name] = &api.DesiredUpdates{}
	}
	get := func(tg string) *api.DesiredUpdates {
		d, ok := out.DesiredTGUpdates[tg]
		if !ok {
			d = &api.DesiredUpdates{}
			out.DesiredTGUpdates[tg] = d
		}
		return d
	}
	touched := map[string]bool{}
	stopped := map[string]bool{}
	for _, p := range plans {
		for _, allocs := range p.NodeUpdate {
			for _, a := range allocs {
				stopped[a.ID] = true
				touched[a.ID] = true
			}
		}
	}
	for _, p := range plans {
		for _, allocs := range p.NodeAllocation {
			for _, a := range allocs {
				d := get(a.TaskGroup)
				existing, _ := snap.AllocByID(nil, a.ID)
				switch {
				case existing != nil:
					d.InPlaceUpdate++
				case a.PreviousAllocation != "" && stopped[a.PreviousAllocation]:
					d.DestructiveUpdate++
					delete(stopped, a.PreviousAllocation)
				default:
					d.Place++
				}
				touched[a.ID] = true
			}
		}
	}
	for _, p := range plans {
		for _, allocs := range p.NodeUpdate {
			for _, a := range allocs {
				if stopped[a.ID] {
					tg := a.TaskGroup
					if tg == "" {
						if ex, _ := snap.AllocByID(nil, a.ID); ex != nil {
							tg = ex.TaskGroup
						}
					}
					get(tg).Stop++
				}
			}
		}
	}
	if allocs, err := snap.AllocsByJob(nil, job.Namespace, job.ID, false); err == nil {
		for _, a := range allocs {
			if !touched[a.ID] && !a.TerminalStatus() {
				get(a.TaskGroup).Ignore++
			}
		}
	}
	return out
}

// jobDiff is the field-level diff between the stored job and the candidate
// (contextual, as `job plan -verbose` shows unchanged fields too), with the
// scheduler's per-group updates attached to each group.
func jobDiff(old, cur *structs.Job, ann *structs.PlanAnnotations) *api.JobDiff {
	d := structs.DiffJobs(old, cur, true)
	for _, tgd := range d.TaskGroups {
		tgd.Updates = map[string]uint64{}
		u := ann.DesiredTGUpdates[tgd.Name]
		if u == nil {
			continue
		}
		for k, v := range map[string]uint64{"create": u.Place, "destroy": u.Stop, "ignore": u.Ignore,
			"create/destroy update": u.DestructiveUpdate, "in-place update": u.InPlaceUpdate,
			"migrate": u.Migrate, "canary": u.Canary} {
			if v > 0 {
				tgd.Updates[k] = v
			}
		}
	}
	return d
}
