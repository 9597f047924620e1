package server

import (
	"time"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/structs"
)

// Dispatch launches a child of a parameterized job with a payload and meta
// checked against the parent's parameterized block. A repeated idempotency
// token returns the child it already dispatched while that child is not dead.
func (j *Job) Dispatch(args *structs.JobDispatchRequest, reply *structs.JobDispatchResponse) error {
	if done, err := j.srv.forward("Job.Dispatch", args.Region, false, args, reply); done {
		return err
	}
	if err := j.srv.authorizeNS(args.AuthToken, args.Namespace, acl.NamespaceCapabilityDispatchJob); err != nil {
		return err
	}
	if err := j.srv.registrationsAllowed(); err != nil {
		return err
	}
	if args.JobID == "" {
		return structs.NewErrCoded(400, "missing parameterized job ID")
	}
	ns := namespaceOf(args.Namespace)
	st := j.srv.State()
	parent, err := st.JobByID(nil, ns, args.JobID)
	if err != nil {
		return err
	}
	if parent == nil {
		return structs.NewErrCoded(404, "parameterized job not found")
	}
	if !parent.IsParameterized() {
		return structs.NewErrCoded(400, "Specified job %q is not a parameterized job", args.JobID)
	}
	if parent.Stop {
		return structs.NewErrCoded(400, "Specified job %q is stopped", args.JobID)
	}
	if err := structs.ValidateDispatch(parent.ParameterizedJob, args.Payload, args.Meta); err != nil {
		return structs.NewErrCoded(400, "%s", err.Error())
	}
	if args.Priority != 0 && (args.Priority < 1 || args.Priority > structs.JobMaxPriority) {
		return structs.NewErrCoded(400, "job priority must be between [1, %d]", structs.JobMaxPriority)
	}
	tok := args.IdempotencyToken
	if tok == "" {
		tok = args.WriteRequest.IdempotencyToken
	}
	if tok != "" {
		iter, err := st.JobsByIDPrefix(nil, ns, parent.ID+"/dispatch-")
		if err != nil {
			return err
		}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			c := raw.(*structs.Job)
			if c.ParentID == parent.ID && c.DispatchIdempotencyToken == tok && c.Status != structs.JobStatusDead {
				reply.DispatchedJobID = c.ID
				reply.JobCreateIndex = c.CreateIndex
				reply.Index = c.ModifyIndex
				return nil
			}
		}
	}

	now := time.Now()
	child := structs.DeriveDispatchedChild(parent, structs.DispatchedID(parent.ID, args.IdPrefixTemplate, now), args.Payload, args.Meta, tok)
	child.SubmitTime = now.UnixNano()
	if args.Priority != 0 {
		child.Priority = args.Priority
	}
	eval := &structs.Evaluation{
		ID: newID(), Namespace: ns, Priority: child.Priority, Type: child.Type,
		TriggeredBy: structs.EvalTriggerJobRegister, JobID: child.ID,
		Status: structs.EvalStatusPending, CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
	}
	req := &structs.JobRegisterRequest{Job: child, Eval: eval,
		WriteRequest: structs.WriteRequest{Namespace: ns, Region: child.Region}}
	_, idx, err := j.srv.raftApply(structs.JobRegisterRequestType, req)
	if err != nil {
		return err
	}
	reply.DispatchedJobID = child.ID
	reply.EvalID, reply.EvalCreateIndex = eval.ID, idx
	reply.JobCreateIndex, reply.Index = idx, idx
	return nil
}
