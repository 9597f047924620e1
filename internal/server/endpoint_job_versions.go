package server

import (
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/structs"
)

// The job endpoints that act on versions: revert, stability, scaling and
// version tags.

// Revert registers an earlier version of a job as its newest version.
func (j *Job) Revert(args *structs.JobRevertRequest, reply *structs.JobRegisterResponse) error {
	if done, err := j.srv.forward("Job.Revert", args.Region, false, args, reply); done {
		return err
	}
	if err := j.srv.authorizeNS(args.AuthToken, args.Namespace, acl.NamespaceCapabilitySubmitJob); err != nil {
		return err
	}
	ns := namespaceOf(args.Namespace)
	st := j.srv.State()
	cur, err := st.JobByID(nil, ns, args.JobID)
	if err != nil {
		return err
	}
	if cur == nil {
		return structs.NewErrCoded(404, "job %q not found", args.JobID)
	}
	if args.JobVersion == cur.Version {
		return structs.NewErrCoded(400, "can't revert to current version")
	}
	if args.EnforcePriorVersion != nil && *args.EnforcePriorVersion != cur.Version {
		return structs.NewErrCoded(400, "Current job has version %d; enforcing version %d", cur.Version, *args.EnforcePriorVersion)
	}
	old, err := st.JobByIDAndVersion(nil, ns, args.JobID, args.JobVersion)
	if err != nil {
		return err
	}
	if old == nil {
		return structs.NewErrCoded(404, "job %q in namespace %q at version %d not found", args.JobID, ns, args.JobVersion)
	}
	job := old.Copy()
	job.Stable, job.VersionTag = false, nil
	reg := &structs.JobRegisterRequest{Job: job, EnforceIndex: true, JobModifyIndex: cur.JobModifyIndex,
		WriteRequest: structs.WriteRequest{Region: args.Region, Namespace: ns}}
	if sub, err := st.JobSubmission(nil, ns, args.JobID, args.JobVersion); err == nil && sub != nil {
		c := *sub
		reg.Submission = &c
	}
	return j.Register(reg, reply)
}

// Stable marks a version of a job stable or unstable.
func (j *Job) Stable(args *structs.JobStabilityRequest, reply *structs.JobStabilityResponse) error {
	if done, err := j.srv.forward("Job.Stable", args.Region, false, args, reply); done {
		return err
	}
	if err := j.srv.authorizeNS(args.AuthToken, args.Namespace, acl.NamespaceCapabilitySubmitJob); err != nil {
		return err
	}
	if args.JobID == "" {
		return structs.NewErrCoded(400, "missing job ID for marking job as stable")
	}
	ns := namespaceOf(args.Namespace)
	v, err := j.srv.State().JobByIDAndVersion(nil, ns, args.JobID, args.JobVersion)
	if err != nil {
		return err
	}
	if v == nil {
		return structs.NewErrCoded(404, "job %q at version %d not found", args.JobID, args.JobVersion)
	}
	req := *args
	req.Namespace = ns
	_, idx, err := j.srv.raftApply(structs.JobStabilityRequestType, &req)
	if err != nil {
		return err
	}
	reply.Index, reply.JobModifyIndex = idx, idx
	return nil
}

// Scale changes one group's count, creating a new job version and an
// evaluation, and records a scaling event. Without a count it only records
// the event (an autoscaler reporting a message or an error).
func (j *Job) Scale(args *structs.JobScaleRequest, reply *structs.JobRegisterResponse) error {
	if done, err := j.srv.forward("Job.Scale", args.Region, false, args, reply); done {
		return err
	}
	if err := j.srv.authorize(args.AuthToken, func(a *acl.ACL) bool {
		return a.AllowNamespaceAnyOperation(namespaceOf(args.Namespace), acl.NamespaceCapabilityScaleJob, acl.NamespaceCapabilitySubmitJob)
	}); err != nil {
		return err
	}
	if err := j.srv.registrationsAllowed(); err != nil {
		return err
	}
	ns := namespaceOf(args.Namespace)
	group := args.Target["Group"]
	if group == "" {
		return structs.NewErrCoded(400, "missing task group name for scaling action")
	}
	if args.Count != nil && args.Error {
		return structs.NewErrCoded(400, "scaling action should not contain count if error is true")
	}
	if args.Count != nil && *args.Count < 0 {
		return structs.NewErrCoded(400, "scaling action count can't be negative")
	}
	st := j.srv.State()
	cur, err := st.JobByID(nil, ns, args.JobID)
	if err != nil {
		return err
	}
	if cur == nil {
		return structs.NewErrCoded(404, "job %q not found", args.JobID)
	}
	tg := cur.LookupTaskGroup(group)
	if tg == nil {
		return structs.NewErrCoded(400, "task group %q specified for scaling does not exist in job", group)
	}
	if args.Count != nil && cur.Stop {
		return structs.NewErrCoded(400, "job %q is stopped: run it again before scaling", cur.ID)
	}
	if cur.IsPeriodic() || cur.IsParameterized() {
		return structs.NewErrCoded(400, "cannot scale a periodic or parameterized job")
	}
	event := &structs.ScalingEvent{Count: args.Count, PreviousCount: int64(tg.Count), Message: args.Message,
		Error: args.Error, Meta: args.Meta, Time: uint64(time.Now().UnixNano())}

	if args.Count != nil {
		if p := tg.Scaling; p != nil && !args.PolicyOverride {
			if p.Min != nil && *args.Count < *p.Min {
				return structs.NewErrCoded(400, "group count was less than scaling policy minimum: %d < %d", *args.Count, *p.Min)
			}
			if p.Max != nil && *args.Count > *p.Max {
				return structs.NewErrCoded(400, "group count was greater than scaling policy maximum: %d > %d", *args.Count, *p.Max)
			}
		}
		// A count change is a new version: while a deployment rolls out
		// the current one it would cut it short (Nomad refuses too).
		dep, err := st.LatestDeploymentByJobID(nil, ns, args.JobID)
		if err != nil {
			return err
		}
		if dep != nil && dep.Active() && dep.JobCreateIndex == cur.CreateIndex {
			return structs.NewErrCoded(400, "job scaling blocked due to active deployment")
		}
		if limit := j.srv.config.JobMaxCount; limit >= 0 && *args.Count > int64(limit) {
			return structs.NewErrCoded(400, "Task group %q: count %d exceeds the server's job_max_count (%d)", group, *args.Count, limit)
		}
		job := cur.Copy()
		job.LookupTaskGroup(group).Count = int(*args.Count)
		reg := &structs.JobRegisterRequest{Job: job, EnforceIndex: true, JobModifyIndex: cur.JobModifyIndex,
			WriteRequest: structs.WriteRequest{Region: args.Region, Namespace: ns}}
		if err := j.register(reg, reply, args.PolicyOverride); err != nil {
			return err
		}
		if reply.EvalID != "" {
			event.EvalID = &reply.EvalID
		}
	}
	_, idx, err := j.srv.raftApply(structs.ScalingEventRegisterRequestType, &structs.ScalingEventRequest{
		Namespace: ns, JobID: cur.ID, TaskGroup: group, ScalingEvent: event,
		WriteRequest: structs.WriteRequest{Region: args.Region, Namespace: ns}})
	if err != nil {
		return err
	}
	reply.Index = idx
	if args.Count == nil {
		reply.JobModifyIndex = cur.JobModifyIndex
	}
	return nil
}

// TagVersion tags a version of a job (or removes a tag with Unset). A tagged
// version is kept however many newer versions follow.
func (j *Job) TagVersion(args *structs.JobTagRequest, reply *structs.GenericResponse) error {
	if done, err := j.srv.forward("Job.TagVersion", args.Region, false, args, reply); done {
		return err
	}
	if err := j.srv.authorizeNS(args.AuthToken, args.Namespace, acl.NamespaceCapabilitySubmitJob); err != nil {
		return err
	}
	if args.Name == "" {
		return structs.NewErrCoded(400, "missing tag name")
	}
	ns := namespaceOf(args.Namespace)
	st := j.srv.State()
	versions, err := st.JobVersionsByID(nil, ns, args.JobID)
	if err != nil {
		return err
	}
	if len(versions) == 0 {
		return structs.NewErrCoded(404, "job %q not found", args.JobID)
	}
	var found, tagged *structs.Job
	for _, v := range versions {
		if v.Version == args.Version {
			found = v
		}
		if v.VersionTag != nil && v.VersionTag.Name == args.Name {
			tagged = v
		}
	}
	req := *args
	req.Namespace = ns
	if args.Unset {
		if tagged == nil {
			return structs.NewErrCoded(404, "tag %q not found on job %q", args.Name, args.JobID)
		}
		req.Tag = nil
	} else {
		if found == nil {
			return structs.NewErrCoded(404, "job %q at version %d not found", args.JobID, args.Version)
		}
		if tagged != nil && tagged.Version != args.Version {
			return structs.NewErrCoded(400, "tag %q already exists on a different version of job %q", args.Name, args.JobID)
		}
		desc := ""
		if args.Tag != nil {
			desc = args.Tag.Description
		}
		req.Tag = &structs.JobVersionTag{Name: args.Name, Description: desc, TaggedTime: time.Now().UnixNano()}
	}
	_, idx, err := j.srv.raftApply(structs.JobVersionTagRequestType, &req)
	if err != nil {
		return err
	}
	reply.Index = idx
	return nil
}

// versionDiffs diffs each version (newest first) with the one before it, or
// with the version named by number or tag. The oldest version (or the
// reference itself) has no diff.
func versionDiffs(versions []*structs.Job, diffVersion *uint64, diffTag string) ([]*api.JobDiff, error) {
	var ref *structs.Job
	switch {
	case diffTag != "":
		for _, v := range versions {
			if v.VersionTag != nil && v.VersionTag.Name == diffTag {
				ref = v
			}
		}
		if ref == nil {
			return nil, structs.NewErrCoded(404, "tag %q not found", diffTag)
		}
	case diffVersion != nil:
		for _, v := range versions {
			if v.Version == *diffVersion {
				ref = v
			}
		}
		if ref == nil {
			return nil, structs.NewErrCoded(404, "version %d not found", *diffVersion)
		}
	}
	out := []*api.JobDiff{}
	for i, v := range versions {
		switch {
		case ref != nil && v.Version != ref.Version:
			out = append(out, structs.DiffJobs(ref, v, false))
		case ref == nil && i+1 < len(versions):
			out = append(out, structs.DiffJobs(versions[i+1], v, false))
		}
	}
	return out, nil
}
