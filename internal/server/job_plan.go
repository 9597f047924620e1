package server

import (
	"sort"
	"time"

	"github.com/hashicorp/nomad/api"

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
	if err := admitJob(args.Job); err != nil {
		return err
	}
	job := args.Job
	snap, err := j.srv.State().Snapshot()
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
	// Write the candidate version into the snapshot only (copy-on-write).
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
		sched, err := scheduler.NewScheduler(job.Type, scheduler.Config{Logger: j.srv.logger.Named("plan"),
			Clock: time.Now, Algorithm: j.srv.config.SchedulerAlgorithm,
			PreemptionEnabled: j.srv.config.preemptionEnabled(), Explain: explain}, snap, planner)
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

// annotate counts per task group what the plans do.
func annotate(snap *state.StateSnapshot, job *structs.Job, plans []*structs.Plan) *structs.PlanAnnotations {
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

// jobDiff summarises what changes between versions: the job's and each
// group's diff type and the scheduler's per-group updates. (Field-level
// diffs come with the jobspec/CLI work.)
func jobDiff(old, cur *structs.Job, ann *structs.PlanAnnotations) *api.JobDiff {
	d := &api.JobDiff{ID: cur.ID, Type: "None"}
	switch {
	case old == nil:
		d.Type = "Added"
	case cur.SpecChanged(old):
		d.Type = "Edited"
	}
	names := map[string]bool{}
	for _, tg := range cur.TaskGroups {
		names[tg.Name] = true
	}
	if old != nil {
		for _, tg := range old.TaskGroups {
			names[tg.Name] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, name := range sorted {
		tgd := &api.TaskGroupDiff{Name: name, Type: "None", Updates: map[string]uint64{}}
		newTG := cur.LookupTaskGroup(name)
		var oldTG *structs.TaskGroup
		if old != nil {
			oldTG = old.LookupTaskGroup(name)
		}
		switch {
		case oldTG == nil:
			tgd.Type = "Added"
		case newTG == nil:
			tgd.Type = "Deleted"
		default:
			if oldTG.Count != newTG.Count {
				tgd.Type = "Edited"
				tgd.Fields = append(tgd.Fields, &api.FieldDiff{Type: "Edited", Name: "Count",
					Old: itoa(oldTG.Count), New: itoa(newTG.Count)})
			} else if d.Type == "Edited" {
				tgd.Type = "Edited"
			}
		}
		if u := ann.DesiredTGUpdates[name]; u != nil {
			for k, v := range map[string]uint64{"place": u.Place, "stop": u.Stop, "ignore": u.Ignore,
				"create/destroy update": u.DestructiveUpdate, "in-place update": u.InPlaceUpdate} {
				if v > 0 {
					tgd.Updates[k] = v
				}
			}
		}
		d.TaskGroups = append(d.TaskGroups, tgd)
	}
	return d
}
