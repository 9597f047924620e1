package reconcile

import (
	"github.com/drover-project/drover/internal/structs"
)

// Deployment status descriptions (Nomad's wording).
const (
	DescDeploymentRunning        = "Deployment is running"
	DescDeploymentNeedsPromotion = "Deployment is running but requires manual promotion"
	DescDeploymentAutoPromotion  = "Deployment is running pending automatic promotion"
	DescDeploymentSuccessful     = "Deployment completed successfully"
	DescDeploymentStoppedJob     = "Cancelled because job is stopped"
	DescDeploymentNewerJob       = "Cancelled due to newer version of job"
)

// updateEmpty reports whether a group has no rolling-update strategy: no
// block, or max_parallel 0 (Nomad's definition).
func updateEmpty(u *structs.UpdateStrategy) bool {
	return u == nil || u.MaxParallel == nil || *u.MaxParallel == 0
}

// maxParallel is the group's max_parallel (0 without a strategy).
func maxParallel(u *structs.UpdateStrategy) int {
	if updateEmpty(u) {
		return 0
	}
	return *u.MaxParallel
}

func canaryCount(u *structs.UpdateStrategy) int {
	if updateEmpty(u) || u.Canary == nil {
		return 0
	}
	return *u.Canary
}

// strategy is the group's update strategy as deployments use it: batch
// jobs never deploy.
func (r *reconciler) strategy(tg *structs.TaskGroup) *structs.UpdateStrategy {
	if r.in.Batch || updateEmpty(tg.Update) {
		return nil
	}
	return tg.Update
}

// cancelUnneededDeployments decides which deployment is current. A
// deployment of another job version (or create index) is old: cancelled
// if still active. A successful one is finished: old too. A stopped job
// cancels its active deployment.
func (r *reconciler) cancelUnneededDeployments(stopped bool) {
	d := r.deployment
	if d == nil {
		return
	}
	if stopped {
		if d.Active() {
			r.res.DeploymentUpdates = append(r.res.DeploymentUpdates, &structs.DeploymentStatusUpdate{
				DeploymentID: d.ID, Status: structs.DeploymentStatusCancelled, StatusDescription: DescDeploymentStoppedJob})
		}
		r.oldDeployment, r.deployment = d, nil
		return
	}
	if d.JobCreateIndex != r.job.CreateIndex || d.JobVersion != r.job.Version {
		if d.Active() {
			r.res.DeploymentUpdates = append(r.res.DeploymentUpdates, &structs.DeploymentStatusUpdate{
				DeploymentID: d.ID, Status: structs.DeploymentStatusCancelled, StatusDescription: DescDeploymentNewerJob})
		}
		r.oldDeployment, r.deployment = d, nil
		return
	}
	if d.Status == structs.DeploymentStatusSuccessful || d.Status == structs.DeploymentStatusCancelled {
		r.oldDeployment, r.deployment = d, nil
	}
}

// initializeDeploymentState returns the group's state in the current
// deployment, or a new one seeded from the group's update strategy (nil
// when the group has none), and whether it already existed.
func (r *reconciler) initializeDeploymentState(tg *structs.TaskGroup) (*structs.DeploymentState, bool) {
	if r.deployment != nil {
		if st, ok := r.deployment.TaskGroups[tg.Name]; ok && st != nil {
			return st, true
		}
	}
	u := r.strategy(tg)
	if u == nil {
		return nil, false
	}
	st := &structs.DeploymentState{}
	if u.AutoRevert != nil {
		st.AutoRevert = *u.AutoRevert
	}
	if u.AutoPromote != nil {
		st.AutoPromote = *u.AutoPromote
	}
	if u.ProgressDeadline != nil {
		st.ProgressDeadline = *u.ProgressDeadline
	}
	return st, false
}

// createDeployment creates the job version's deployment (once, for the
// first group that needs it) and attaches the group's state: the group has
// an update strategy and something to do, and either this is the first
// time this version runs or the spec changed under running allocations.
func (r *reconciler) createDeployment(tg *structs.TaskGroup, existing bool, dstate *structs.DeploymentState, all, destructive allocSet) {
	if existing || dstate == nil || r.strategy(tg) == nil || dstate.DesiredTotal == 0 {
		return
	}
	updatingSpec := len(destructive) != 0 || len(r.res.InPlace) != 0
	hadRunning := false
	for _, a := range all {
		if OnVersion(a, r.job) {
			hadRunning = true
			break
		}
	}
	if hadRunning && !updatingSpec {
		return
	}
	if r.deployment == nil {
		now := r.in.Now.UnixNano()
		r.deployment = &structs.Deployment{
			ID:                 r.in.NewID(),
			Namespace:          r.job.Namespace,
			JobID:              r.job.ID,
			JobVersion:         r.job.Version,
			JobModifyIndex:     r.job.ModifyIndex,
			JobSpecModifyIndex: r.job.JobModifyIndex,
			JobCreateIndex:     r.job.CreateIndex,
			TaskGroups:         make(map[string]*structs.DeploymentState),
			Status:             structs.DeploymentStatusRunning,
			StatusDescription:  DescDeploymentRunning,
			EvalPriority:       r.in.EvalPriority,
			CreateTime:         now,
			ModifyTime:         now,
		}
		r.res.Deployment = r.deployment
	}
	if r.deployment.TaskGroups == nil {
		r.deployment.TaskGroups = make(map[string]*structs.DeploymentState)
	}
	r.deployment.TaskGroups[tg.Name] = dstate
}

// isDeploymentComplete reports whether the group needs nothing more from
// the current deployment: nothing left to do and enough healthy
// allocations (and its canaries promoted). pending counts the changes
// still to make.
func (r *reconciler) isDeploymentComplete(group string, pending int, requiresCanaries bool) bool {
	if pending != 0 || requiresCanaries || r.deployment == nil {
		return false
	}
	if st, ok := r.deployment.TaskGroups[group]; ok && st != nil {
		if st.HealthyAllocs < max(st.DesiredTotal, st.DesiredCanaries) || st.DesiredCanaries > 0 && !st.Promoted {
			return false
		}
	}
	return true
}

// setDeploymentStatus marks the current deployment successful when every
// group is complete, and describes a new deployment that needs promotion.
func (r *reconciler) setDeploymentStatus(complete bool) {
	if d := r.deployment; d != nil && complete && d.Active() && r.res.Deployment == nil {
		r.res.DeploymentUpdates = append(r.res.DeploymentUpdates, &structs.DeploymentStatusUpdate{
			DeploymentID: d.ID, Status: structs.DeploymentStatusSuccessful, StatusDescription: DescDeploymentSuccessful})
	}
	d := r.res.Deployment
	if d == nil {
		return
	}
	needs, auto := false, true
	for _, st := range d.TaskGroups {
		if st.DesiredCanaries > 0 && !st.Promoted {
			needs = true
			auto = auto && st.AutoPromote
		}
	}
	if needs {
		if auto {
			d.StatusDescription = DescDeploymentAutoPromotion
		} else {
			d.StatusDescription = DescDeploymentNeedsPromotion
		}
	}
}

// copyDeployment copies a deployment deeply enough to change its groups.
func copyDeployment(d *structs.Deployment) *structs.Deployment {
	c := *d
	c.TaskGroups = make(map[string]*structs.DeploymentState, len(d.TaskGroups))
	for k, v := range d.TaskGroups {
		if v == nil {
			continue
		}
		s := *v
		s.PlacedCanaries = append([]string(nil), v.PlacedCanaries...)
		c.TaskGroups[k] = &s
	}
	return &c
}
