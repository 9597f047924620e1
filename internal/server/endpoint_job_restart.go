package server

import (
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/server/restarts"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Restart starts a rolling restart of the job's running allocations (the
// leader's runner carries it out, job_restart.go). One restart per job runs
// at a time.
func (j *Job) Restart(args *structs.JobRestartStartRequest, reply *structs.JobRestartResponse) error {
	if done, err := j.srv.forward("Job.Restart", args.Region, false, args, reply); done {
		return err
	}
	if err := j.srv.authorizeNS(args.AuthToken, args.Namespace, acl.NamespaceCapabilityAllocLifecycle); err != nil {
		return err
	}
	if err := args.Spec.Validate(); err != nil {
		return structs.NewErrCoded(400, "%s", err.Error())
	}
	ns := namespaceOf(args.Namespace)
	st := j.srv.State()
	job, err := st.JobByID(nil, ns, args.JobID)
	if err != nil {
		return err
	}
	if job == nil {
		return structs.NewErrCoded(404, "job not found")
	}
	if job.Stop {
		return structs.NewErrCoded(400, "job %q is stopped", args.JobID)
	}
	if args.Spec.Reschedule && (job.Type == structs.JobTypeSystem || job.Type == structs.JobTypeSysBatch) {
		// As Nomad: a system job's allocations are bound to their nodes.
		return structs.NewErrCoded(400, "Reschedule: jobs of type %q cannot be rescheduled", job.Type)
	}
	if cur, err := st.JobRestartByJob(nil, ns, args.JobID); err != nil {
		return err
	} else if cur.Active() {
		return structs.NewErrCoded(409, "job %q already has a restart in progress (%s, %s); cancel it first", args.JobID, cur.ID, cur.Status)
	}
	allocs, err := st.AllocsByJob(nil, ns, args.JobID, false)
	if err != nil {
		return err
	}
	r, err := restarts.Plan(newID(), job, allocs, args.Spec, time.Now())
	if err != nil {
		return structs.NewErrCoded(400, "%s", err.Error())
	}
	_, idx, err := j.srv.raftApply(structs.JobRestartRequestType, &structs.JobRestartRequest{Restart: r})
	if err != nil {
		return err
	}
	stored, err := j.srv.State().JobRestartByJob(nil, ns, args.JobID)
	if err != nil {
		return err
	}
	reply.Restart, reply.Index = stored, idx
	return nil
}

// RestartControl resumes a paused restart or cancels an active one.
// Allocations already asked to restart finish doing so; no more are asked.
func (j *Job) RestartControl(args *structs.JobRestartControlRequest, reply *structs.JobRestartResponse) error {
	if done, err := j.srv.forward("Job.RestartControl", args.Region, false, args, reply); done {
		return err
	}
	if err := j.srv.authorizeNS(args.AuthToken, args.Namespace, acl.NamespaceCapabilityAllocLifecycle); err != nil {
		return err
	}
	ns := namespaceOf(args.Namespace)
	cur, err := j.srv.State().JobRestartByJob(nil, ns, args.JobID)
	if err != nil {
		return err
	}
	if !cur.Active() {
		return structs.NewErrCoded(404, "job %q has no restart in progress", args.JobID)
	}
	r := cur.Copy()
	r.ModifyTime = time.Now().UnixNano()
	if args.Resume {
		if r.Status != structs.JobRestartStatusPaused {
			return structs.NewErrCoded(400, "restart %s is %s, not paused", r.ID, r.Status)
		}
		r.Status, r.StatusDescription = structs.JobRestartStatusRunning, "resumed"
	} else {
		r.Status, r.StatusDescription = structs.JobRestartStatusCanceled, "canceled by an operator"
	}
	_, idx, err := j.srv.raftApply(structs.JobRestartRequestType, &structs.JobRestartRequest{Restart: r})
	if err != nil {
		return err
	}
	stored, err := j.srv.State().JobRestartByJob(nil, ns, args.JobID)
	if err != nil {
		return err
	}
	reply.Restart, reply.Index = stored, idx
	return nil
}

// GetRestart returns the job's latest restart (blocking query).
func (j *Job) GetRestart(args *structs.JobRestartSpecificRequest, reply *structs.JobRestartResponse) error {
	if done, err := j.srv.forward("Job.GetRestart", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		r, err := st.JobRestartByJob(ws, ns, args.JobID)
		if err != nil {
			return err
		}
		reply.Restart = r
		if r != nil {
			reply.Index = r.ModifyIndex
		} else {
			reply.Index = maxIndex(st, "job_restart")
		}
		return nil
	})
}
