package server

import (
	"fmt"
	"time"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// The operator's actions on a deployment: promote, pause and resume, fail,
// set allocation health, and the multi-region unblock, run and cancel
// (refused for a single-region deployment). Each checks the request against
// the newest state, answering 400/404 with what is wrong, then writes one
// Raft entry with the status change and, where the scheduler must act, an
// evaluation (triggered by deployment-watcher); the FSM checks again, so a
// race with the watcher cannot apply a refused change.

// Nomad's deployment status descriptions for the operator's actions.
const (
	deployDescRunning              = "Deployment is running"
	deployDescRunningNeedsPromote  = "Deployment is running but requires manual promotion"
	deployDescRunningAutoPromote   = "Deployment is running pending automatic promotion"
	deployDescPaused               = "Deployment is paused"
	deployDescFailedByUser         = "Deployment marked as failed"
	deployDescFailedAllocations    = "Failed due to unhealthy allocations"
	deployDescUnblocked            = "Deployment was unblocked"
	deployDescCancelledByUser      = "Deployment was cancelled"
	deployDescRollback             = "%s - rolling back to job version %d"
	deployDescRollbackNoop         = "%s - not rolling back to stable job version %d as current job has same specification"
	deployDescRollbackNoStableJob  = "%s - no stable job version to auto revert to"
	deployErrNotMultiregion        = "deployment %q is not multiregion: %s applies only to multi-region deployments"
	deployErrMissingID             = "missing deployment ID"
	deployErrSetHealthTerminal     = "can't set health of allocations for a terminal deployment"
	deployErrNoHealthIDs           = "must specify at least one healthy/unhealthy allocation ID (HealthyAllocationIDs, UnhealthyAllocationIDs)"
	deployErrPromoteNothingAsked   = "must promote all groups (All) or name at least one group (Groups)"
	deployErrPromoteUnknownGroup   = "deployment %q has no task group %q (Groups)"
	deployErrHealthNotOfDeployment = "allocation %q is not part of deployment %q"
)

// deploymentFor looks up a deployment and its job for an action: 400 without
// an ID, 404 when unknown, 400 "can't <verb> terminal deployment" when it
// is over (unless verb is empty). The job is nil when it was purged or
// registered again since.
func (d *Deployment) deploymentFor(id, verb string) (*state.StateSnapshot, *structs.Deployment, *structs.Job, error) {
	if id == "" {
		return nil, nil, nil, structs.NewErrCoded(400, deployErrMissingID)
	}
	snap, err := d.srv.State().Snapshot()
	if err != nil {
		return nil, nil, nil, err
	}
	dep, err := snap.DeploymentByID(nil, id)
	if err != nil {
		return nil, nil, nil, err
	}
	if dep == nil {
		return nil, nil, nil, structs.NewErrCoded(404, "deployment %q not found", id)
	}
	if verb != "" && !dep.Active() {
		return nil, nil, nil, structs.NewErrCoded(400, "can't %s terminal deployment", verb)
	}
	job, err := snap.JobByID(nil, dep.Namespace, dep.JobID)
	if err != nil {
		return nil, nil, nil, err
	}
	if job != nil && dep.JobCreateIndex != 0 && job.CreateIndex != dep.JobCreateIndex {
		job = nil
	}
	return snap, dep, job, nil
}

// deploymentEval is the evaluation that makes the scheduler act on a
// deployment's change.
func deploymentEval(dep *structs.Deployment, job *structs.Job, now time.Time) *structs.Evaluation {
	e := &structs.Evaluation{ID: newID(), Namespace: dep.Namespace, JobID: dep.JobID, DeploymentID: dep.ID,
		TriggeredBy: structs.EvalTriggerDeploymentWatcher, Status: structs.EvalStatusPending,
		Type: structs.JobTypeService, Priority: structs.JobDefaultPriority,
		CreateTime: now.UnixNano(), ModifyTime: now.UnixNano()}
	if job != nil {
		e.Type, e.Priority, e.JobModifyIndex = job.Type, job.Priority, job.JobModifyIndex
	}
	if dep.EvalPriority > 0 {
		e.Priority = dep.EvalPriority
	}
	return e
}

// rollbackFor decides a failing deployment's rollback: when one of its
// groups (those for which revert is true) auto-reverts, the job's latest
// stable version is registered again, unless there is none or its spec is
// the current one. It returns the job to register (nil: none), the stable
// version it copies (reported as RevertedJobVersion, as Nomad does) and desc
// extended with what was decided.
func rollbackFor(snap *state.StateSnapshot, dep *structs.Deployment, job *structs.Job, revert func(group string) bool, desc string, now time.Time) (*structs.Job, *uint64, string, error) {
	wanted := false
	for g, st := range dep.TaskGroups {
		if st != nil && st.AutoRevert && revert(g) {
			wanted = true
		}
	}
	if !wanted || job == nil {
		return nil, nil, desc, nil
	}
	versions, err := snap.JobVersionsByID(nil, job.Namespace, job.ID)
	if err != nil {
		return nil, nil, "", err
	}
	var stable *structs.Job
	for _, v := range versions { // newest first
		if v.Stable && v.CreateIndex == job.CreateIndex {
			stable = v
			break
		}
	}
	switch {
	case stable == nil:
		return nil, nil, fmt.Sprintf(deployDescRollbackNoStableJob, desc), nil
	case !job.SpecChanged(stable):
		return nil, nil, fmt.Sprintf(deployDescRollbackNoop, desc, stable.Version), nil
	}
	rb := stable.Copy()
	rb.Stable, rb.VersionTag = false, nil
	rb.SubmitTime = now.UnixNano()
	ver := stable.Version
	return rb, &ver, fmt.Sprintf(deployDescRollback, desc, stable.Version), nil
}

// Promote promotes the canaries of all or the named groups.
func (d *Deployment) Promote(args *structs.DeploymentPromoteRequest, reply *structs.DeploymentUpdateResponse) error {
	if done, err := d.srv.forward("Deployment.Promote", args.Region, false, args, reply); done {
		return err
	}
	if err := d.srv.authorizeDeployment(args.AuthToken, args.DeploymentID); err != nil {
		return err
	}
	if args.DeploymentID != "" && !args.All && len(args.Groups) == 0 {
		return structs.NewErrCoded(400, deployErrPromoteNothingAsked)
	}
	snap, dep, job, err := d.deploymentFor(args.DeploymentID, "promote")
	if err != nil {
		return err
	}
	if !args.All {
		for _, g := range args.Groups {
			if _, ok := dep.TaskGroups[g]; !ok {
				return structs.NewErrCoded(400, deployErrPromoteUnknownGroup, dep.ID, g)
			}
		}
	}
	if err := snap.CheckDeploymentPromotion(dep, args); err != nil {
		return structs.NewErrCoded(400, "%s", err.Error())
	}
	eval := deploymentEval(dep, job, time.Now())
	req := &structs.ApplyDeploymentPromoteRequest{DeploymentPromoteRequest: *args, Eval: eval}
	req.Namespace = dep.Namespace
	_, idx, err := d.srv.raftApply(structs.DeploymentPromoteRequestType, req)
	if err != nil {
		return err
	}
	reply.EvalID, reply.EvalCreateIndex, reply.DeploymentModifyIndex, reply.Index = eval.ID, idx, idx, idx
	return nil
}

// Pause pauses (Pause) or resumes a deployment; resuming creates an eval so
// the rollout goes on.
func (d *Deployment) Pause(args *structs.DeploymentPauseRequest, reply *structs.DeploymentUpdateResponse) error {
	if done, err := d.srv.forward("Deployment.Pause", args.Region, false, args, reply); done {
		return err
	}
	if err := d.srv.authorizeDeployment(args.AuthToken, args.DeploymentID); err != nil {
		return err
	}
	verb := "resume"
	if args.Pause {
		verb = "pause"
	}
	_, dep, job, err := d.deploymentFor(args.DeploymentID, verb)
	if err != nil {
		return err
	}
	req := &structs.DeploymentStatusUpdateRequest{WriteRequest: structs.WriteRequest{Region: args.Region, Namespace: dep.Namespace}}
	if args.Pause {
		req.DeploymentUpdate = &structs.DeploymentStatusUpdate{DeploymentID: dep.ID, Status: structs.DeploymentStatusPaused,
			StatusDescription: deployDescPaused}
	} else {
		req.DeploymentUpdate = &structs.DeploymentStatusUpdate{DeploymentID: dep.ID, Status: structs.DeploymentStatusRunning,
			StatusDescription: runningDescription(dep)}
		req.Eval = deploymentEval(dep, job, time.Now())
	}
	_, idx, err := d.srv.raftApply(structs.DeploymentStatusUpdateRequestType, req)
	if err != nil {
		return err
	}
	reply.DeploymentModifyIndex, reply.Index = idx, idx
	if req.Eval != nil {
		reply.EvalID, reply.EvalCreateIndex = req.Eval.ID, idx
	}
	return nil
}

// runningDescription describes a running deployment by what it waits for.
func runningDescription(dep *structs.Deployment) string {
	needs, auto := false, true
	for _, st := range dep.TaskGroups {
		if st != nil && st.DesiredCanaries > 0 && !st.Promoted {
			needs = true
			auto = auto && st.AutoPromote
		}
	}
	switch {
	case needs && auto:
		return deployDescRunningAutoPromote
	case needs:
		return deployDescRunningNeedsPromote
	}
	return deployDescRunning
}

// Fail fails a deployment, rolling back to the latest stable version when
// its groups auto-revert.
func (d *Deployment) Fail(args *structs.DeploymentFailRequest, reply *structs.DeploymentUpdateResponse) error {
	if done, err := d.srv.forward("Deployment.Fail", args.Region, false, args, reply); done {
		return err
	}
	if err := d.srv.authorizeDeployment(args.AuthToken, args.DeploymentID); err != nil {
		return err
	}
	snap, dep, job, err := d.deploymentFor(args.DeploymentID, "fail")
	if err != nil {
		return err
	}
	now := time.Now()
	rb, reverted, desc, err := rollbackFor(snap, dep, job, func(string) bool { return true }, deployDescFailedByUser, now)
	if err != nil {
		return err
	}
	req := &structs.DeploymentStatusUpdateRequest{
		DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: dep.ID, Status: structs.DeploymentStatusFailed, StatusDescription: desc},
		Job:              rb, Eval: deploymentEval(dep, job, now),
		WriteRequest: structs.WriteRequest{Region: args.Region, Namespace: dep.Namespace}}
	_, idx, err := d.srv.raftApply(structs.DeploymentStatusUpdateRequestType, req)
	if err != nil {
		return err
	}
	reply.EvalID, reply.EvalCreateIndex, reply.DeploymentModifyIndex, reply.Index = req.Eval.ID, idx, idx, idx
	reply.RevertedJobVersion = reverted
	return nil
}

// SetAllocHealth marks allocations of the deployment healthy or unhealthy
// by hand. An unhealthy one fails the deployment (rolling back when its
// group auto-reverts).
func (d *Deployment) SetAllocHealth(args *structs.DeploymentAllocHealthRequest, reply *structs.DeploymentUpdateResponse) error {
	if done, err := d.srv.forward("Deployment.SetAllocHealth", args.Region, false, args, reply); done {
		return err
	}
	if err := d.srv.authorizeDeployment(args.AuthToken, args.DeploymentID); err != nil {
		return err
	}
	if args.DeploymentID != "" && len(args.HealthyAllocationIDs)+len(args.UnhealthyAllocationIDs) == 0 {
		return structs.NewErrCoded(400, deployErrNoHealthIDs)
	}
	healthy := map[string]bool{}
	for _, id := range args.HealthyAllocationIDs {
		healthy[id] = true
	}
	for _, id := range args.UnhealthyAllocationIDs {
		if healthy[id] {
			return structs.NewErrCoded(400, "allocation %q is listed as both healthy (HealthyAllocationIDs) and unhealthy (UnhealthyAllocationIDs)", id)
		}
	}
	snap, dep, job, err := d.deploymentFor(args.DeploymentID, "")
	if err != nil {
		return err
	}
	if !dep.Active() {
		return structs.NewErrCoded(400, deployErrSetHealthTerminal)
	}
	unhealthyGroups := map[string]bool{}
	var reverted *uint64
	for _, ids := range [][]string{args.HealthyAllocationIDs, args.UnhealthyAllocationIDs} {
		for _, id := range ids {
			a, err := snap.AllocByID(nil, id)
			if err != nil {
				return err
			}
			if a == nil || a.DeploymentID != dep.ID {
				return structs.NewErrCoded(400, deployErrHealthNotOfDeployment, id, dep.ID)
			}
			if !healthy[id] {
				unhealthyGroups[a.TaskGroup] = true
			}
		}
	}
	now := time.Now()
	req := &structs.ApplyDeploymentAllocHealthRequest{DeploymentAllocHealthRequest: *args, Timestamp: now.UTC(),
		Eval: deploymentEval(dep, job, now)}
	req.Namespace = dep.Namespace
	if len(unhealthyGroups) > 0 {
		rb, ver, desc, err := rollbackFor(snap, dep, job, func(g string) bool { return unhealthyGroups[g] }, deployDescFailedAllocations, now)
		if err != nil {
			return err
		}
		req.DeploymentUpdate = &structs.DeploymentStatusUpdate{DeploymentID: dep.ID, Status: structs.DeploymentStatusFailed, StatusDescription: desc}
		req.Job, reverted = rb, ver
	}
	_, idx, err := d.srv.raftApply(structs.DeploymentAllocHealthRequestType, req)
	if err != nil {
		return err
	}
	reply.RevertedJobVersion = reverted
	reply.EvalID, reply.EvalCreateIndex, reply.DeploymentModifyIndex, reply.Index = req.Eval.ID, idx, idx, idx
	return nil
}

// Unblock ends a blocked multi-region deployment successfully.
func (d *Deployment) Unblock(args *structs.DeploymentUnblockRequest, reply *structs.DeploymentUpdateResponse) error {
	if done, err := d.srv.forward("Deployment.Unblock", args.Region, false, args, reply); done {
		return err
	}
	if err := d.srv.authorizeDeployment(args.AuthToken, args.DeploymentID); err != nil {
		return err
	}
	return d.multiregion(args.DeploymentID, args.Region, "unblock", structs.DeploymentStatusBlocked,
		structs.DeploymentStatusSuccessful, deployDescUnblocked, false, reply)
}

// Run starts a pending multi-region deployment.
func (d *Deployment) Run(args *structs.DeploymentRunRequest, reply *structs.DeploymentUpdateResponse) error {
	if done, err := d.srv.forward("Deployment.Run", args.Region, false, args, reply); done {
		return err
	}
	if err := d.srv.authorizeDeployment(args.AuthToken, args.DeploymentID); err != nil {
		return err
	}
	return d.multiregion(args.DeploymentID, args.Region, "run", structs.DeploymentStatusPending,
		structs.DeploymentStatusRunning, deployDescRunning, true, reply)
}

// Cancel cancels an active multi-region deployment.
func (d *Deployment) Cancel(args *structs.DeploymentCancelRequest, reply *structs.DeploymentUpdateResponse) error {
	if done, err := d.srv.forward("Deployment.Cancel", args.Region, false, args, reply); done {
		return err
	}
	if err := d.srv.authorizeDeployment(args.AuthToken, args.DeploymentID); err != nil {
		return err
	}
	return d.multiregion(args.DeploymentID, args.Region, "cancel", "",
		structs.DeploymentStatusCancelled, deployDescCancelledByUser, true, reply)
}

// multiregion moves a multi-region deployment from status from ("" = any
// active status) to status to; a single-region deployment refuses.
func (d *Deployment) multiregion(id, region, verb, from, to, desc string, withEval bool, reply *structs.DeploymentUpdateResponse) error {
	_, dep, job, err := d.deploymentFor(id, verb)
	if err != nil {
		return err
	}
	if !dep.IsMultiregion {
		return structs.NewErrCoded(400, deployErrNotMultiregion, dep.ID, verb)
	}
	if from != "" && dep.Status != from {
		return structs.NewErrCoded(400, "can't %s deployment %q: its status is %q, not %q", verb, dep.ID, dep.Status, from)
	}
	req := &structs.DeploymentStatusUpdateRequest{
		DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: dep.ID, Status: to, StatusDescription: desc},
		WriteRequest:     structs.WriteRequest{Region: region, Namespace: dep.Namespace}}
	if withEval {
		req.Eval = deploymentEval(dep, job, time.Now())
	}
	_, idx, err := d.srv.raftApply(structs.DeploymentStatusUpdateRequestType, req)
	if err != nil {
		return err
	}
	reply.DeploymentModifyIndex, reply.Index = idx, idx
	if req.Eval != nil {
		reply.EvalID, reply.EvalCreateIndex = req.Eval.ID, idx
	}
	return nil
}
