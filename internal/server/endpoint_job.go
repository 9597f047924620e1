package server

import (
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/drivers/catalog"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
	"github.com/drover-project/drover/internal/structs/unsupported"
)

// Job is the RPC endpoint for jobs.
type Job struct{ srv *Server }

// admitJob canonicalizes and validates a submitted job, and checks it for
// parts Drover does not act on yet (structs/unsupported): those refused
// fail the job with a 400 together with the validation errors; the warnings
// are returned, formatted for the reply's Warnings.
func admitJob(job *structs.Job) (warnings string, err error) {
	return admitJobScaled(job, false)
}

// admitJobScaled is admitJob for a job scale: with policyOverride a group's
// count may leave its scaling policy's [min, max], as Nomad allows.
func admitJobScaled(job *structs.Job, policyOverride bool) (warnings string, err error) {
	if job == nil {
		return "", structs.NewErrCoded(400, "Job must be specified")
	}
	job.Canonicalize()
	problems, gaps := checkJob(job)
	if !policyOverride {
		problems = append(problems, job.ScalingCountErrors()...)
	}
	if len(problems) > 0 {
		return "", structs.NewErrCoded(400, "Job validation failed: %s", (&structs.ValidationError{Errors: problems}).Error())
	}
	return gaps.WarningsText(), nil
}

// checkJob lists what is wrong with a canonicalized job (validation errors,
// then refused features) and what it uses that Drover ignores.
func checkJob(job *structs.Job) ([]string, unsupported.Gaps) {
	var problems []string
	if err := job.Validate(); err != nil {
		if ve, ok := err.(*structs.ValidationError); ok {
			problems = append(problems, ve.Errors...)
		} else {
			problems = append(problems, err.Error())
		}
	}
	gaps := unsupported.Check(job, catalog.Builtin)
	return append(problems, gaps.Refused...), gaps
}

// Register creates or updates a job and its evaluation.
func (j *Job) Register(args *structs.JobRegisterRequest, reply *structs.JobRegisterResponse) error {
	if done, err := j.srv.forward("Job.Register", args.Region, false, args, reply); done {
		return err
	}
	if err := j.srv.authorizeNS(args.AuthToken, jobNamespace(args.Job, args.Namespace), acl.NamespaceCapabilitySubmitJob); err != nil {
		return err
	}
	if err := j.srv.authorizeHostVolumes(args.AuthToken, args.Job); err != nil {
		return err
	}
	if err := j.srv.registrationsAllowed(); err != nil {
		return err
	}
	return j.register(args, reply, false)
}

// register is Register on the leader; policyOverride is a job scale's.
func (j *Job) register(args *structs.JobRegisterRequest, reply *structs.JobRegisterResponse, policyOverride bool) error {
	if err := j.srv.admitNamespace(args.Job); err != nil {
		return err
	}
	warnings, err := admitJobScaled(args.Job, policyOverride)
	if err != nil {
		return err
	}
	reply.Warnings = warnings
	job := args.Job
	if args.Namespace != "" && job.Namespace != args.Namespace && args.Namespace != structs.DefaultNamespace {
		return structs.NewErrCoded(400, "Job namespace %q does not match request namespace %q", job.Namespace, args.Namespace)
	}
	st := j.srv.State()
	existing, err := st.JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	if args.EnforceIndex {
		var cur uint64
		if existing != nil {
			cur = existing.JobModifyIndex
		}
		if args.JobModifyIndex != cur {
			if cur == 0 {
				return structs.NewErrCoded(400, "Enforcing job modify index %d: job does not exist", args.JobModifyIndex)
			}
			return structs.NewErrCoded(400, "Enforcing job modify index %d: job exists with conflicting job modify index: %d", args.JobModifyIndex, cur)
		}
	}
	if existing != nil && existing.Type != job.Type {
		return structs.NewErrCoded(400, "cannot update job from type %q to %q", existing.Type, job.Type)
	}
	// Policy IDs are chosen here, before the Raft entry: a target that
	// already had a policy keeps its ID, so an unchanged spec stays unchanged.
	job.SetScalingTargets()
	job.AssignScalingPolicyIDs(existing, newID)
	if existing != nil && (args.PreserveCounts || args.PreserveResources) {
		for _, tg := range job.TaskGroups {
			prev := existing.LookupTaskGroup(tg.Name)
			if prev == nil {
				continue
			}
			if args.PreserveCounts {
				tg.Count = prev.Count
			}
			if args.PreserveResources {
				for _, t := range tg.Tasks {
					if pt := prev.LookupTask(t.Name); pt != nil && pt.Resources != nil {
						r := *pt.Resources
						t.Resources = &r
					}
				}
			}
		}
	}

	if err := j.srv.checkJobLimits(job); err != nil {
		return err
	}

	now := time.Now()
	var eval *structs.Evaluation
	if !job.IsPeriodic() && !job.IsParameterized() {
		prio := job.Priority
		if args.EvalPriority > 0 {
			prio = args.EvalPriority
		}
		eval = &structs.Evaluation{
			ID: newID(), Namespace: job.Namespace, Priority: prio, Type: job.Type,
			TriggeredBy: structs.EvalTriggerJobRegister, JobID: job.ID,
			Status: structs.EvalStatusPending, CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
		}
	}

	if existing != nil && !job.SpecChanged(existing) && !existing.Stop {
		// Unchanged spec: no new version, only a new evaluation.
		reply.JobModifyIndex = existing.JobModifyIndex
		if eval == nil {
			reply.Index = existing.ModifyIndex
			return nil
		}
		eval.JobModifyIndex = existing.JobModifyIndex
		_, idx, err := j.srv.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}})
		if err != nil {
			return err
		}
		reply.EvalID, reply.EvalCreateIndex, reply.Index = eval.ID, idx, idx
		return nil
	}

	job.SubmitTime = now.UnixNano()
	job.Stop = false
	req := &structs.JobRegisterRequest{Job: job, Eval: eval, Submission: j.srv.boundSubmission(args.Submission, job), WriteRequest: args.WriteRequest}
	// Written together with the registrations arriving meanwhile; the
	// reply waits for the entry and carries this registration's outcome.
	idx, err := j.srv.jobRegs.Apply(req)
	if err != nil {
		return err
	}
	reply.JobModifyIndex = idx
	reply.Index = idx
	if eval != nil {
		reply.EvalID, reply.EvalCreateIndex = eval.ID, idx
	}
	return nil
}

// Validate checks a job without registering it.
func (j *Job) Validate(args *structs.JobValidateRequest, reply *structs.JobValidateResponse) error {
	if args.Job == nil {
		return structs.NewErrCoded(400, "Job must be specified")
	}
	validateJob(args.Job, j.srv.config.JobMaxCount, reply)
	return nil
}

// validateJob canonicalizes job and answers what Job.Validate answers for
// it under the group-count limit maxCount (negative: none).
func validateJob(job *structs.Job, maxCount int, reply *structs.JobValidateResponse) {
	job.Canonicalize()
	problems, gaps := checkJob(job)
	problems = append(problems, job.ScalingCountErrors()...)
	// Configs of the built-in drivers were checked against their schemas.
	reply.DriverConfigValidated = true
	if len(problems) > 0 {
		reply.ValidationErrors = problems
		reply.Error = (&structs.ValidationError{Errors: problems}).Error()
	}
	if errs := jobCountErrors(job, maxCount); len(errs) > 0 {
		reply.ValidationErrors = append(reply.ValidationErrors, errs...)
		reply.Error = (&structs.ValidationError{Errors: reply.ValidationErrors}).Error()
	}
	reply.Warnings = gaps.WarningsText()
}

// Deregister stops a job, or purges it.
func (j *Job) Deregister(args *structs.JobDeregisterRequest, reply *structs.JobDeregisterResponse) error {
	if done, err := j.srv.forward("Job.Deregister", args.Region, false, args, reply); done {
		return err
	}
	if err := j.srv.authorizeNS(args.AuthToken, args.Namespace, acl.NamespaceCapabilitySubmitJob); err != nil {
		return err
	}
	if args.JobID == "" {
		return structs.NewErrCoded(400, "missing job ID for deregistering")
	}
	ns := namespaceOf(args.Namespace)
	job, err := j.srv.State().JobByID(nil, ns, args.JobID)
	if err != nil {
		return err
	}
	if job == nil {
		// Nothing to stop: answer like a no-op write.
		reply.Index = maxIndex(j.srv.State(), "jobs")
		return nil
	}
	now := time.Now()
	var eval *structs.Evaluation
	if !job.IsPeriodic() && !job.IsParameterized() {
		prio := job.Priority
		if args.EvalPriority > 0 {
			prio = args.EvalPriority
		}
		eval = &structs.Evaluation{
			ID: newID(), Namespace: ns, Priority: prio, Type: job.Type,
			TriggeredBy: structs.EvalTriggerJobDeregister, JobID: job.ID,
			JobModifyIndex: job.JobModifyIndex,
			Status:         structs.EvalStatusPending, CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
		}
	}
	req := &structs.JobDeregisterRequest{JobID: args.JobID, Purge: args.Purge, Eval: eval, NoShutdownDelay: args.NoShutdownDelay,
		SubmitTime: now.UnixNano(), WriteRequest: structs.WriteRequest{Namespace: ns, Region: args.Region}}
	_, idx, err := j.srv.raftApply(structs.JobDeregisterRequestType, req)
	if err != nil {
		return err
	}
	reply.JobModifyIndex, reply.Index = idx, idx
	if eval != nil {
		reply.EvalID, reply.EvalCreateIndex = eval.ID, idx
	}
	return nil
}

// Evaluate forces a new evaluation of a job.
func (j *Job) Evaluate(args *structs.JobEvaluateRequest, reply *structs.JobRegisterResponse) error {
	if done, err := j.srv.forward("Job.Evaluate", args.Region, false, args, reply); done {
		return err
	}
	if err := j.srv.authorizeNS(args.AuthToken, args.Namespace, acl.NamespaceCapabilitySubmitJob); err != nil {
		return err
	}
	ns := namespaceOf(args.Namespace)
	job, err := j.srv.State().JobByID(nil, ns, args.JobID)
	if err != nil {
		return err
	}
	if job == nil {
		return structs.NewErrCoded(404, "job not found")
	}
	if job.IsPeriodic() || job.IsParameterized() {
		return structs.NewErrCoded(400, "can't evaluate periodic or parameterized job")
	}
	now := time.Now().UnixNano()
	eval := &structs.Evaluation{ID: newID(), Namespace: ns, Priority: job.Priority, Type: job.Type,
		TriggeredBy: structs.EvalTriggerJobRegister, JobID: job.ID, JobModifyIndex: job.JobModifyIndex,
		Status: structs.EvalStatusPending, CreateTime: now, ModifyTime: now}
	var idx uint64
	if args.EvalOptions.ForceReschedule {
		force, err := j.forceRescheduleTransitions(job)
		if err != nil {
			return err
		}
		// The marks and the evaluation are one entry: the scheduler that
		// runs the evaluation sees the allocations marked.
		_, idx, err = j.srv.raftApply(structs.AllocUpdateDesiredTransitionRequestType,
			&structs.AllocUpdateDesiredTransitionRequest{Allocs: force, Evals: []*structs.Evaluation{eval}})
		if err != nil {
			return err
		}
	} else {
		_, idx, err = j.srv.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{eval}})
		if err != nil {
			return err
		}
	}
	reply.EvalID, reply.EvalCreateIndex, reply.JobModifyIndex, reply.Index = eval.ID, idx, job.JobModifyIndex, idx
	return nil
}

// forceRescheduleTransitions marks for an immediate replacement every failed
// allocation of the job that is not yet replaced, in groups whose
// reschedule policy allows rescheduling at all: the ones past their
// attempts and the ones waiting for a later reschedule are placed now.
func (j *Job) forceRescheduleTransitions(job *structs.Job) (map[string]*structs.DesiredTransition, error) {
	allocs, err := j.srv.State().AllocsByJob(nil, job.Namespace, job.ID, false)
	if err != nil {
		return nil, err
	}
	force := map[string]*structs.DesiredTransition{}
	yes := true
	for _, a := range allocs {
		if a.ClientStatus != structs.AllocClientStatusFailed || a.ServerTerminalStatus() || a.NextAllocation != "" {
			continue
		}
		if a.DesiredTransition.ForceReschedule != nil && *a.DesiredTransition.ForceReschedule {
			continue
		}
		p := structs.ReschedulePolicyOf(job, a.TaskGroup)
		if job.LookupTaskGroup(a.TaskGroup) == nil || p == nil || (p.Attempts <= 0 && !p.Unlimited) {
			continue
		}
		force[a.ID] = &structs.DesiredTransition{ForceReschedule: &yes}
	}
	return force, nil
}

// GetJob returns one job.
func (j *Job) GetJob(args *structs.JobSpecificRequest, reply *structs.SingleJobResponse) error {
	if done, err := j.srv.forward("Job.GetJob", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		job, err := st.JobByID(ws, ns, args.JobID)
		if err != nil {
			return err
		}
		reply.Job = job
		if job != nil {
			reply.Index = job.ModifyIndex
		} else {
			reply.Index = maxIndex(st, "jobs")
		}
		return nil
	})
}

// List returns job stubs.
func (j *Job) List(args *structs.JobListRequest, reply *structs.JobListResponse) error {
	if done, err := j.srv.forward("Job.List", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	filter, err := compileFilter(args.Filter)
	if err != nil {
		return err
	}
	readable, err := j.srv.listNamespaces(&args.QueryOptions)
	if err != nil {
		return err
	}
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		iter, err := st.JobsByIDPrefix(ws, ns, args.Prefix)
		if err != nil {
			return err
		}
		var all []*structs.Job
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			all = append(all, raw.(*structs.Job))
		}
		sort.SliceStable(all, func(a, b int) bool {
			if all[a].Namespace != all[b].Namespace {
				return all[a].Namespace < all[b].Namespace
			}
			return all[a].ID < all[b].ID
		})
		all = onlyReadable(all, readable, func(j *structs.Job) string { return j.Namespace })
		page, next, err := paginate(all, &args.QueryOptions, func(j *structs.Job) string { return j.Namespace + "/" + j.ID }, keep[*structs.Job](filter))
		if err != nil {
			return err
		}
		out := make([]*structs.JobListStub, 0, len(page))
		for _, job := range page {
			sum, err := st.JobSummaryByID(ws, job.Namespace, job.ID)
			if err != nil {
				return err
			}
			stub := job.Stub(sum)
			if !args.IncludeMeta {
				stub.Meta = nil
			}
			out = append(out, stub)
		}
		reply.Jobs, reply.NextToken = out, next
		reply.Index = maxIndex(st, "jobs", "job_summary")
		return nil
	})
}

// GetJobVersions lists a job's tracked versions, newest first.
func (j *Job) GetJobVersions(args *structs.JobVersionsRequest, reply *structs.JobVersionsResponse) error {
	if done, err := j.srv.forward("Job.GetJobVersions", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		versions, err := st.JobVersionsByID(ws, ns, args.JobID)
		if err != nil {
			return err
		}
		if versions == nil {
			versions = []*structs.Job{}
		}
		reply.Versions = versions
		if args.Diffs || args.DiffVersion != nil || args.DiffTagName != "" {
			diffs, err := versionDiffs(versions, args.DiffVersion, args.DiffTagName)
			if err != nil {
				return err
			}
			reply.Diffs = diffs
		}
		if len(versions) > 0 {
			reply.Index = versions[0].ModifyIndex
		} else {
			reply.Index = maxIndex(st, "job_version")
		}
		return nil
	})
}

// Summary returns a job's per-group counts.
func (j *Job) Summary(args *structs.JobSpecificRequest, reply *structs.JobSummaryResponse) error {
	if done, err := j.srv.forward("Job.Summary", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		sum, err := st.JobSummaryByID(ws, ns, args.JobID)
		if err != nil {
			return err
		}
		reply.JobSummary = sum
		if sum != nil {
			reply.Index = sum.ModifyIndex
		} else {
			reply.Index = maxIndex(st, "job_summary")
		}
		return nil
	})
}

// Allocations lists a job's allocations.
func (j *Job) Allocations(args *structs.JobSpecificRequest, reply *structs.JobAllocationsResponse) error {
	if done, err := j.srv.forward("Job.Allocations", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		allocs, err := st.AllocsByJob(ws, ns, args.JobID, args.All)
		if err != nil {
			return err
		}
		out := make([]*structs.AllocListStub, 0, len(allocs))
		var idx uint64
		for _, a := range allocs {
			out = append(out, a.Stub())
			if a.ModifyIndex > idx {
				idx = a.ModifyIndex
			}
		}
		sort.Slice(out, func(a, b int) bool { return out[a].CreateIndex > out[b].CreateIndex })
		reply.Allocations = out
		if idx == 0 {
			idx = maxIndex(st, "allocs")
		}
		reply.Index = idx
		return nil
	})
}

// Evaluations lists a job's evaluations.
func (j *Job) Evaluations(args *structs.JobSpecificRequest, reply *structs.JobEvaluationsResponse) error {
	if done, err := j.srv.forward("Job.Evaluations", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		evals, err := st.EvalsByJob(ws, ns, args.JobID)
		if err != nil {
			return err
		}
		if evals == nil {
			evals = []*structs.Evaluation{}
		}
		sort.Slice(evals, func(a, b int) bool { return evals[a].CreateIndex > evals[b].CreateIndex })
		reply.Evaluations = evals
		reply.Index = maxIndex(st, "evals")
		return nil
	})
}

// Deployments lists a job's deployments.
func (j *Job) Deployments(args *structs.JobSpecificRequest, reply *structs.DeploymentListResponse) error {
	if done, err := j.srv.forward("Job.Deployments", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		ds, err := st.DeploymentsByJobID(ws, ns, args.JobID, args.All)
		if err != nil {
			return err
		}
		if ds == nil {
			ds = []*structs.Deployment{}
		}
		reply.Deployments = ds
		reply.Index = maxIndex(st, "deployment")
		return nil
	})
}

// LatestDeployment returns a job's newest deployment.
func (j *Job) LatestDeployment(args *structs.JobSpecificRequest, reply *structs.SingleDeploymentResponse) error {
	if done, err := j.srv.forward("Job.LatestDeployment", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		d, err := st.LatestDeploymentByJobID(ws, ns, args.JobID)
		if err != nil {
			return err
		}
		reply.Deployment = d
		reply.Index = maxIndex(st, "deployment")
		return nil
	})
}

func namespaceOf(ns string) string {
	if ns == "" {
		return structs.DefaultNamespace
	}
	return ns
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
