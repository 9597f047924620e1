package state

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// The writes of the deployment Raft entries (structs/deployment_ops.go):
// status changes with an optional rollback job, promotions, allocation
// health set by hand or by the watcher, and desired transitions. Each is one
// transaction: a failing entry writes nothing.

// UpdateDeploymentStatus applies a DeploymentStatusUpdateRequest: the
// deployment's new status (its job version becomes stable when the status
// is successful), the optional job registered as a new version (a
// rollback) and the optional eval.
func (s *StateStore) UpdateDeploymentStatus(index uint64, req *structs.DeploymentStatusUpdateRequest) error {
	if req == nil || req.DeploymentUpdate == nil {
		return fmt.Errorf("state: deployment status update without an update")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()
	jobs := jobKeys{}
	// A resume carries the eval that goes on with the rollout; its
	// creation time (the leader's clock: apply reads none) restarts the
	// progress deadlines.
	var at time.Time
	if req.Eval != nil && req.Eval.CreateTime != 0 {
		at = time.Unix(0, req.Eval.CreateTime).UTC()
	}
	if err := setDeploymentStatus(txn, index, req.DeploymentUpdate, jobs, at); err != nil {
		return err
	}
	if err := upsertFollowUp(txn, index, req.Job, req.Eval, jobs); err != nil {
		return err
	}
	if err := refreshJobStatuses(txn, index, jobs, false); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// setDeploymentStatus sets an active deployment's status; unlike a plan's
// updates (applyDeploymentUpdate), an unknown or terminal deployment is an
// error: two writers racing (an operator failing a deployment while the
// watcher fails it too) cannot both apply, nor roll back twice. A paused
// deployment resumed at a known time (at) gets its whole progress deadline
// again from then, as Nomad does: time spent paused does not count, or
// the resume would fail it at once.
func setDeploymentStatus(txn *memdb.Txn, index uint64, u *structs.DeploymentStatusUpdate, jobs jobKeys, at time.Time) error {
	raw, err := txn.First(tableDeployment, "id", u.DeploymentID)
	if err != nil {
		return fmt.Errorf("state: deployment lookup: %w", err)
	}
	if raw == nil {
		return fmt.Errorf("deployment %q does not exist", u.DeploymentID)
	}
	d := raw.(*structs.Deployment)
	if !d.Active() {
		return fmt.Errorf("deployment %q has terminal status %q", d.ID, d.Status)
	}
	resumed := d.Status == structs.DeploymentStatusPaused && u.Status == structs.DeploymentStatusRunning && !at.IsZero()
	if err := applyDeploymentUpdate(txn, index, u, jobs); err != nil {
		return err
	}
	if !resumed {
		return nil
	}
	raw, err = txn.First(tableDeployment, "id", u.DeploymentID)
	if err != nil {
		return fmt.Errorf("state: deployment lookup: %w", err)
	}
	c := copyDeployment(raw.(*structs.Deployment))
	for _, st := range c.TaskGroups {
		// A group that has placed nothing yet starts its deadline at
		// its first placement.
		if st != nil && st.ProgressDeadline > 0 && !st.RequireProgressBy.IsZero() {
			st.RequireProgressBy = at.Add(st.ProgressDeadline)
		}
	}
	if err := txn.Insert(tableDeployment, c); err != nil {
		return fmt.Errorf("state: deployment insert: %w", err)
	}
	return nil
}

// upsertFollowUp writes what a deployment change carries after it: a job
// registered as its newest version (an auto-revert) and an eval.
func upsertFollowUp(txn *memdb.Txn, index uint64, job *structs.Job, eval *structs.Evaluation, jobs jobKeys) error {
	if job != nil {
		if err := upsertJobTxn(txn, index, nil, job); err != nil {
			return err
		}
		ns := job.Namespace
		if ns == "" {
			ns = structs.DefaultNamespace
		}
		jobs.add(ns, job.ID)
	}
	if eval != nil {
		if err := upsertEvalsTxn(txn, index, []*structs.Evaluation{eval}); err != nil {
			return err
		}
	}
	return nil
}

// markDeploymentStable marks the job version a successful deployment rolled
// out stable. A version no longer tracked, or of a purged incarnation of the
// job, is left alone.
func markDeploymentStable(txn *memdb.Txn, index uint64, d *structs.Deployment) error {
	raw, err := txn.First(tableJobVersion, "id", d.Namespace, d.JobID, d.JobVersion)
	if err != nil {
		return fmt.Errorf("state: job version lookup: %w", err)
	}
	if raw == nil {
		return nil
	}
	v := raw.(*structs.Job)
	if v.Stable || (d.JobCreateIndex != 0 && v.CreateIndex != d.JobCreateIndex) {
		return nil
	}
	return updateVersion(txn, index, d.Namespace, d.JobID, d.JobVersion, func(j *structs.Job) { j.Stable = true })
}

// UpdateDeploymentPromotion applies an ApplyDeploymentPromoteRequest: every
// named group (all with All) that has canaries is promoted (see
// promotableCanaries) and its promoted canaries stop being canaries.
func (s *StateStore) UpdateDeploymentPromotion(index uint64, req *structs.ApplyDeploymentPromoteRequest) error {
	if req == nil {
		return fmt.Errorf("state: deployment promotion without a request")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()
	raw, err := txn.First(tableDeployment, "id", req.DeploymentID)
	if err != nil {
		return fmt.Errorf("state: deployment lookup: %w", err)
	}
	if raw == nil {
		return fmt.Errorf("deployment %q does not exist", req.DeploymentID)
	}
	d := raw.(*structs.Deployment)
	promotable, err := promotableCanaries(txn, d, &req.DeploymentPromoteRequest)
	if err != nil {
		return err
	}
	selected := promoteSelector(&req.DeploymentPromoteRequest)
	c := copyDeployment(d)
	c.ModifyIndex = index
	var now time.Time
	if req.Eval != nil && req.Eval.CreateTime != 0 {
		now = time.Unix(0, req.Eval.CreateTime).UTC()
	}
	for g, st := range c.TaskGroups {
		if st == nil || !selected(g) {
			continue
		}
		st.Promoted = true
		// The rest of the group is placed from now on: its progress
		// deadline starts again (from the leader's eval time: apply reads
		// no clock).
		if st.ProgressDeadline > 0 && !st.RequireProgressBy.IsZero() && !now.IsZero() {
			st.RequireProgressBy = now.Add(st.ProgressDeadline)
		}
	}
	if c.Status == structs.DeploymentStatusRunning && !requiresPromotion(c) {
		c.StatusDescription = deploymentDescRunning
	}
	if err := txn.Insert(tableDeployment, c); err != nil {
		return fmt.Errorf("state: deployment insert: %w", err)
	}
	for _, a := range promotable {
		p := *a
		ds := *a.DeploymentStatus
		ds.Canary = false
		ds.ModifyIndex = index
		p.DeploymentStatus = &ds
		p.ModifyIndex = index
		p.AllocModifyIndex = index
		if err := txn.Insert(tableAllocs, &p); err != nil {
			return fmt.Errorf("state: alloc insert: %w", err)
		}
	}
	if err := bumpIndex(txn, index, tableDeployment, tableAllocs); err != nil {
		return err
	}
	jobs := jobKeys{}
	jobs.add(c.Namespace, c.JobID)
	if err := upsertFollowUp(txn, index, nil, req.Eval, jobs); err != nil {
		return err
	}
	if err := refreshJobStatuses(txn, index, jobs, false); err != nil {
		return err
	}
	s.commitAllocs(txn)
	return nil
}

// CheckDeploymentPromotion reports why req cannot promote deployment d
// (nil when it can), as UpdateDeploymentPromotion would refuse it.
func (s *reader) CheckDeploymentPromotion(d *structs.Deployment, req *structs.DeploymentPromoteRequest) error {
	txn := s.db.Txn(false)
	defer txn.Abort()
	_, err := promotableCanaries(txn, d, req)
	return err
}

func promoteSelector(req *structs.DeploymentPromoteRequest) func(string) bool {
	return func(group string) bool {
		if req.All {
			return true
		}
		for _, g := range req.Groups {
			if g == group {
				return true
			}
		}
		return false
	}
}

// promotableCanaries returns the canaries req promotes: the live healthy
// canaries of the selected groups. A selected group that wants canaries must
// have at least its desired number of them placed and healthy; a group
// without canaries is skipped; nothing to promote at all is an error, as is a terminal
// deployment. The errors name each group that is not ready.
func promotableCanaries(txn *memdb.Txn, d *structs.Deployment, req *structs.DeploymentPromoteRequest) ([]*structs.Allocation, error) {
	if !d.Active() {
		return nil, fmt.Errorf("can't promote terminal deployment")
	}
	selected := promoteSelector(req)
	groups := make([]string, 0, len(d.TaskGroups))
	for g := range d.TaskGroups {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var problems []string
	var promotable []*structs.Allocation
	for _, g := range groups {
		st := d.TaskGroups[g]
		if st == nil || !selected(g) || st.DesiredCanaries == 0 {
			continue
		}
		var healthy []*structs.Allocation
		for _, id := range st.PlacedCanaries {
			a, err := allocLookup(txn, id)
			if err != nil {
				return nil, err
			}
			if a == nil || a.DeploymentID != d.ID || a.TerminalStatus() {
				continue
			}
			if a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil || !*a.DeploymentStatus.Healthy {
				continue
			}
			healthy = append(healthy, a)
		}
		if len(healthy) < st.DesiredCanaries {
			problems = append(problems, fmt.Sprintf("Task group %q has %d/%d healthy allocations", g, len(healthy), st.DesiredCanaries))
			continue
		}
		promotable = append(promotable, healthy...)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	if len(promotable) == 0 {
		return nil, fmt.Errorf("no canaries to promote")
	}
	return promotable, nil
}

// deploymentDescRunning is Nomad's description of a running deployment
// that waits for nothing.
const deploymentDescRunning = "Deployment is running"

// requiresPromotion reports whether a group of d still waits for its
// canaries to be promoted.
func requiresPromotion(d *structs.Deployment) bool {
	for _, st := range d.TaskGroups {
		if st != nil && st.DesiredCanaries > 0 && !st.Promoted {
			return true
		}
	}
	return false
}

// UpdateDeploymentAllocHealth applies an ApplyDeploymentAllocHealthRequest:
// the named allocations (each must belong to the deployment) become healthy
// or unhealthy at req.Timestamp, the deployment's counters and progress
// deadline follow, then the optional status update, rollback job and eval.
func (s *StateStore) UpdateDeploymentAllocHealth(index uint64, req *structs.ApplyDeploymentAllocHealthRequest) error {
	if req == nil {
		return fmt.Errorf("state: deployment alloc health without a request")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()
	raw, err := txn.First(tableDeployment, "id", req.DeploymentID)
	if err != nil {
		return fmt.Errorf("state: deployment lookup: %w", err)
	}
	if raw == nil {
		return fmt.Errorf("deployment %q does not exist", req.DeploymentID)
	}
	if d := raw.(*structs.Deployment); !d.Active() {
		return fmt.Errorf("deployment %q has terminal status %q", d.ID, d.Status)
	}
	jobs := jobKeys{}
	sums := newDerivedRows()
	set := func(id string, healthy bool) error {
		ex, err := allocLookup(txn, id)
		if err != nil {
			return err
		}
		if ex == nil {
			return fmt.Errorf("unknown alloc %q", id)
		}
		if ex.DeploymentID != req.DeploymentID {
			return fmt.Errorf("alloc %q is not part of deployment %q", id, req.DeploymentID)
		}
		c := *ex
		ds := structs.AllocDeploymentStatus{}
		if ex.DeploymentStatus != nil {
			ds = *ex.DeploymentStatus
		}
		h := healthy
		ds.Healthy = &h
		ds.Timestamp = req.Timestamp
		ds.ModifyIndex = index
		c.DeploymentStatus = &ds
		c.ModifyIndex = index
		return writeAlloc(txn, index, ex, &c, jobs, sums)
	}
	for _, id := range req.HealthyAllocationIDs {
		if err := set(id, true); err != nil {
			return err
		}
	}
	for _, id := range req.UnhealthyAllocationIDs {
		if err := set(id, false); err != nil {
			return err
		}
	}
	if len(req.HealthyAllocationIDs)+len(req.UnhealthyAllocationIDs) > 0 {
		if err := sums.write(txn, index); err != nil {
			return err
		}
		if err := bumpIndex(txn, index, tableAllocs); err != nil {
			return err
		}
	}
	if req.DeploymentUpdate != nil {
		if err := setDeploymentStatus(txn, index, req.DeploymentUpdate, jobs, time.Time{}); err != nil {
			return err
		}
	}
	if err := upsertFollowUp(txn, index, req.Job, req.Eval, jobs); err != nil {
		return err
	}
	if err := refreshJobStatuses(txn, index, jobs, false); err != nil {
		return err
	}
	s.commitAllocs(txn)
	return nil
}

// UpdateAllocsDesiredTransitions merges desired transitions into the named
// allocations (unknown ones are skipped: they may have been collected) and
// writes the evals, in one transaction.
func (s *StateStore) UpdateAllocsDesiredTransitions(index uint64, allocs map[string]*structs.DesiredTransition, evals []*structs.Evaluation) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	ids := make([]string, 0, len(allocs))
	for id := range allocs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	written := false
	for _, id := range ids {
		t := allocs[id]
		if t == nil {
			continue
		}
		ex, err := allocLookup(txn, id)
		if err != nil {
			return err
		}
		if ex == nil {
			continue
		}
		c := *ex
		mergeTransition(&c.DesiredTransition, *t)
		c.ModifyIndex = index
		c.AllocModifyIndex = index
		if err := txn.Insert(tableAllocs, &c); err != nil {
			return fmt.Errorf("state: alloc insert: %w", err)
		}
		written = true
	}
	if written {
		if err := bumpIndex(txn, index, tableAllocs); err != nil {
			return err
		}
	}
	if err := upsertEvalsTxn(txn, index, evals); err != nil {
		return err
	}
	s.commitAllocs(txn)
	return nil
}
