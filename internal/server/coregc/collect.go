// Package coregc owns the server's core garbage collection: which
// evaluations, allocations, dead jobs, terminal deployments and down nodes
// may be removed, and the bounded Raft entries that remove them.
//
// Collect is a pure function of a state snapshot and the cutoffs (Raft
// indexes: an object whose ModifyIndex is at or below its kind's cutoff is
// old enough). The leader (internal/server, core_gc.go) turns thresholds
// into cutoffs through the FSM's index->time table, runs Collect on a
// snapshot and proposes the batches Entries returns, in order. It never
// reads a clock itself and never writes; the state writes re-check what
// could have changed between the read and the commit (state/gc.go).
//
// What is never collected: an evaluation that is not terminal or that has
// an allocation that is not; an allocation still running (or unknown) on
// its client, or failed and still to be rescheduled from; a job that is not
// dead, that has a tagged version, or that still has an evaluation or
// allocation that may not go; a deployment that is active, has a live
// allocation, or is the newest of a job that still exists; a node that is
// not down or still holds an allocation that is not terminal.
package coregc

import (
	"math"
	"sort"
	"time"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Cutoffs are the newest Raft index an object of each kind may have been
// modified at to be old enough. Force() makes everything old enough.
type Cutoffs struct {
	Eval       uint64 // evaluations of service and system jobs (eval_gc_threshold)
	BatchEval  uint64 // evaluations of batch jobs (batch_eval_gc_threshold)
	Job        uint64 // dead jobs (job_gc_threshold)
	Deployment uint64 // terminal deployments (deployment_gc_threshold)
	Node       uint64 // down nodes (node_gc_threshold)
	// Now is the wall-clock time of the collection, for reschedule
	// intervals of failed allocations (the caller's clock).
	Now time.Time
}

// Force returns the cutoffs of a forced collection: no threshold applies.
func Force(now time.Time) Cutoffs {
	return Cutoffs{math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64, math.MaxUint64, now}
}

// Result is what one collection removes.
type Result struct {
	// Evals and Allocs are removed by EvalDelete entries (allocations
	// first, so an evaluation never goes before its allocations).
	Evals  []string
	Allocs []string
	// Jobs are purged (JobBatchDeregister) after their evaluations and
	// allocations, which are part of Evals and Allocs.
	Jobs        []*structs.JobBatchDeregisterJob
	Deployments []string
	Nodes       []string
}

// Empty reports whether nothing is to be removed.
func (r *Result) Empty() bool {
	return len(r.Evals)+len(r.Allocs)+len(r.Jobs)+len(r.Deployments)+len(r.Nodes) == 0
}

// Collect decides what may be removed from snap.
func Collect(snap *state.StateSnapshot, cut Cutoffs) (*Result, error) {
	c := &collector{snap: snap, cut: cut, res: &Result{}, goneJobs: map[structs.NamespacedID]bool{}}
	if cut.Eval == 0 && cut.BatchEval == 0 && cut.Job == 0 && cut.Deployment == 0 && cut.Node == 0 {
		return c.res, nil // nothing is old enough yet (no Raft index is)
	}
	if err := c.jobsAndEvals(); err != nil {
		return nil, err
	}
	if err := c.deployments(); err != nil {
		return nil, err
	}
	if err := c.nodes(); err != nil {
		return nil, err
	}
	return c.res, nil
}

type collector struct {
	snap *state.StateSnapshot
	cut  Cutoffs
	res  *Result
	// goneJobs are the jobs this collection purges or that no longer
	// exist (their deployments may all go).
	goneJobs map[structs.NamespacedID]bool
}

// jobsAndEvals walks every job that has a stored job row or evaluation, in
// (namespace, ID) order.
func (c *collector) jobsAndEvals() error {
	keys, evalsByJob, err := c.snap.EvalsByJobKey(nil)
	if err != nil {
		return err
	}
	jobs := map[structs.NamespacedID]*structs.Job{}
	iter, err := c.snap.Jobs(nil)
	if err != nil {
		return err
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		j := raw.(*structs.Job)
		k := structs.NamespacedID{Namespace: j.Namespace, ID: j.ID}
		jobs[k] = j
		if _, ok := evalsByJob[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Namespace != keys[j].Namespace {
			return keys[i].Namespace < keys[j].Namespace
		}
		return keys[i].ID < keys[j].ID
	})
	for _, k := range keys {
		if err := c.job(k, jobs[k], evalsByJob[k]); err != nil {
			return err
		}
	}
	return nil
}

// job decides about one job's evaluations, allocations and the job itself.
func (c *collector) job(k structs.NamespacedID, job *structs.Job, evals []*structs.Evaluation) error {
	allocsByEval, err := c.snap.GCAllocsByJob(nil, k.Namespace, k.ID)
	if err != nil {
		return err
	}
	if job == nil {
		c.goneJobs[k] = true
	}
	// The job as a whole: collected with everything it has, or not at all.
	if job != nil && jobCollectable(job) && job.ModifyIndex <= c.cut.Job {
		tagged, err := c.hasTaggedVersion(job)
		if err != nil {
			return err
		}
		if !tagged {
			evalIDs, allocIDs, all := c.jobContents(job, evals, allocsByEval)
			if all {
				c.res.Evals = append(c.res.Evals, evalIDs...)
				c.res.Allocs = append(c.res.Allocs, allocIDs...)
				c.res.Jobs = append(c.res.Jobs, &structs.JobBatchDeregisterJob{
					Namespace: job.Namespace, ID: job.ID, ModifyIndex: job.ModifyIndex})
				c.goneJobs[k] = true
				return nil
			}
		}
	}
	// Evaluations one by one, and the allocations that may go with them.
	known := make(map[string]bool, len(evals))
	for _, e := range evals {
		known[e.ID] = true
		ok, allocIDs := c.eval(e, job, allocsByEval[e.ID], c.evalCutoff(e), false)
		if ok {
			c.res.Evals = append(c.res.Evals, e.ID)
		}
		c.res.Allocs = append(c.res.Allocs, allocIDs...)
	}
	// Allocations whose evaluation is already gone (deleted by an operator
	// through DELETE /v1/evaluations, or by an earlier collection
	// interrupted by a leader change).
	for _, evalID := range sortedKeys(allocsByEval) {
		if known[evalID] {
			continue
		}
		orphan := &structs.Evaluation{ID: evalID, Status: structs.EvalStatusComplete}
		cut := c.cut.Eval
		if job == nil || job.Type == structs.JobTypeBatch || job.Type == structs.JobTypeSysBatch {
			orphan.Type, cut = structs.JobTypeBatch, c.cut.BatchEval
		}
		_, allocIDs := c.eval(orphan, job, allocsByEval[evalID], cut, false)
		c.res.Allocs = append(c.res.Allocs, allocIDs...)
	}
	return nil
}

// jobContents returns a collectable job's evaluations and allocations, and
// whether all of them may go.
func (c *collector) jobContents(job *structs.Job, evals []*structs.Evaluation, allocsByEval map[string][]*structs.Allocation) (evalIDs, allocIDs []string, all bool) {
	known := make(map[string]bool, len(evals))
	for _, e := range evals {
		known[e.ID] = true
		ok, ids := c.eval(e, job, allocsByEval[e.ID], c.cut.Job, true)
		if !ok {
			return nil, nil, false
		}
		evalIDs = append(evalIDs, e.ID)
		allocIDs = append(allocIDs, ids...)
	}
	for _, evalID := range sortedKeys(allocsByEval) {
		if known[evalID] {
			continue
		}
		for _, a := range allocsByEval[evalID] {
			if !allocCollectable(a, job, c.cut.Now, c.cut.Job) {
				return nil, nil, false
			}
			allocIDs = append(allocIDs, a.ID)
		}
	}
	return evalIDs, allocIDs, true
}

func (c *collector) evalCutoff(e *structs.Evaluation) uint64 {
	if e.Type == structs.JobTypeBatch || e.Type == structs.JobTypeSysBatch {
		return c.cut.BatchEval
	}
	return c.cut.Eval
}

// eval reports whether evaluation e may go and which of its allocations
// may. Batch evaluations of a job that is still registered and may run
// again keep their allocations (the scheduler would otherwise run finished
// work again), unless the job collection itself asks (allowBatch) or the
// allocations belong to an older incarnation of the job.
func (c *collector) eval(e *structs.Evaluation, job *structs.Job, allocs []*structs.Allocation, cutoff uint64, allowBatch bool) (bool, []string) {
	if !e.TerminalStatus() || e.ModifyIndex > cutoff {
		return false, nil
	}
	if e.Type == structs.JobTypeBatch || e.Type == structs.JobTypeSysBatch {
		collect := job == nil || (job.Status == structs.JobStatusDead && (job.Stop || allowBatch))
		if !collect {
			var old []string
			for _, a := range allocs {
				if a.Job != nil && a.Job.CreateIndex < job.CreateIndex && a.TerminalStatus() &&
					a.ClientStatus != structs.AllocClientStatusRunning && a.ModifyIndex <= cutoff {
					old = append(old, a.ID)
				}
			}
			return len(old) == len(allocs), old
		}
	}
	all := true
	var ids []string
	for _, a := range allocs {
		if allocCollectable(a, job, c.cut.Now, cutoff) {
			ids = append(ids, a.ID)
		} else {
			all = false
		}
	}
	return all, ids
}

// allocCollectable reports whether an allocation may be removed: terminal,
// old enough, not running (or unknown) on its client, and not a failed
// allocation a live job may still reschedule from.
func allocCollectable(a *structs.Allocation, job *structs.Job, now time.Time, cutoff uint64) bool {
	if !a.TerminalStatus() || a.ModifyIndex > cutoff {
		return false
	}
	switch a.ClientStatus {
	case structs.AllocClientStatusRunning, structs.AllocClientStatusUnknown:
		return false
	}
	if job == nil || job.Stop || job.Status == structs.JobStatusDead {
		return true
	}
	if a.DesiredStatus == structs.AllocDesiredStatusStop || a.ClientStatus != structs.AllocClientStatusFailed {
		return true
	}
	// A failed allocation of a live job: the reschedule tracker of its
	// replacement is built from it, so it stays until it was replaced or
	// can no longer be.
	if a.NextAllocation != "" {
		return true
	}
	var policy *structs.ReschedulePolicy
	if tg := job.LookupTaskGroup(a.TaskGroup); tg != nil {
		policy = tg.ReschedulePolicy
	}
	if policy == nil || (!policy.Unlimited && policy.Attempts == 0) {
		return true
	}
	if policy.Unlimited || a.RescheduleTracker == nil || len(a.RescheduleTracker.Events) == 0 {
		return false
	}
	last := a.RescheduleTracker.Events[len(a.RescheduleTracker.Events)-1]
	return now.UnixNano()-last.RescheduleTime > policy.Interval.Nanoseconds()
}

// jobCollectable reports whether a job is of a kind GC purges: a stopped
// periodic or parameterized parent; otherwise a dead job that was stopped
// or is a batch job.
func jobCollectable(j *structs.Job) bool {
	if j.IsPeriodic() || j.IsParameterized() {
		return j.Stop
	}
	if j.Status != structs.JobStatusDead {
		return false
	}
	return j.Stop || j.Type == structs.JobTypeBatch || j.Type == structs.JobTypeSysBatch
}

func (c *collector) hasTaggedVersion(j *structs.Job) (bool, error) {
	versions, err := c.snap.JobVersionsByID(nil, j.Namespace, j.ID)
	if err != nil {
		return false, err
	}
	for _, v := range versions {
		if v.VersionTag != nil {
			return true, nil
		}
	}
	return j.VersionTag != nil, nil
}

// deployments collects terminal deployments old enough, with no live
// allocation, that are not the newest deployment of a job still
// registered (job status shows it; the reconciler and the deployment
// watcher look it up).
func (c *collector) deployments() error {
	iter, err := c.snap.Deployments(nil)
	if err != nil {
		return err
	}
	byJob := map[structs.NamespacedID][]*structs.Deployment{}
	var keys []structs.NamespacedID
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		d := raw.(*structs.Deployment)
		k := structs.NamespacedID{Namespace: d.Namespace, ID: d.JobID}
		if _, ok := byJob[k]; !ok {
			keys = append(keys, k)
		}
		byJob[k] = append(byJob[k], d)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Namespace != keys[j].Namespace {
			return keys[i].Namespace < keys[j].Namespace
		}
		return keys[i].ID < keys[j].ID
	})
	for _, k := range keys {
		ds := byJob[k]
		var newest *structs.Deployment
		if !c.goneJobs[k] {
			for _, d := range ds {
				if newest == nil || d.CreateIndex > newest.CreateIndex {
					newest = d
				}
			}
		}
		var live map[string]bool
		for _, d := range ds {
			if d == newest || !deploymentTerminal(d) || d.ModifyIndex > c.cut.Deployment {
				continue
			}
			if live == nil {
				if live, err = c.liveDeployments(k); err != nil {
					return err
				}
			}
			if !live[d.ID] {
				c.res.Deployments = append(c.res.Deployments, d.ID)
			}
		}
	}
	sort.Strings(c.res.Deployments)
	return nil
}

// liveDeployments returns the deployments a job's allocations that are not
// terminal belong to.
func (c *collector) liveDeployments(k structs.NamespacedID) (map[string]bool, error) {
	byEval, err := c.snap.GCAllocsByJob(nil, k.Namespace, k.ID)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, allocs := range byEval {
		for _, a := range allocs {
			if a.DeploymentID != "" && (!a.TerminalStatus() || a.ClientStatus == structs.AllocClientStatusRunning) {
				live[a.DeploymentID] = true
			}
		}
	}
	return live, nil
}

func deploymentTerminal(d *structs.Deployment) bool {
	switch d.Status {
	case structs.DeploymentStatusSuccessful, structs.DeploymentStatusFailed, structs.DeploymentStatusCancelled:
		return true
	}
	return false
}

// nodes collects down nodes old enough with no allocation that is not
// terminal.
func (c *collector) nodes() error {
	iter, err := c.snap.Nodes(nil)
	if err != nil {
		return err
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		n := raw.(*structs.Node)
		if n.Status != structs.NodeStatusDown || n.ModifyIndex > c.cut.Node {
			continue
		}
		live, err := c.snap.AllocsByNodeTerminal(nil, n.ID, false)
		if err != nil {
			return err
		}
		if len(live) == 0 {
			c.res.Nodes = append(c.res.Nodes, n.ID)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// IndexClock maps a wall-clock time to the newest Raft index appended at
// or before it (fsm.TimeTable).
type IndexClock interface {
	NearestIndex(t time.Time) uint64
}

// Thresholds are the ages each kind of object must reach after its last
// change before it is collected.
type Thresholds struct {
	Eval, BatchEval, Job, Deployment, Node time.Duration
}

// CutoffsAt turns thresholds into cutoffs at time now.
func CutoffsAt(clock IndexClock, th Thresholds, now time.Time) Cutoffs {
	return Cutoffs{
		Eval:       clock.NearestIndex(now.Add(-th.Eval)),
		BatchEval:  clock.NearestIndex(now.Add(-th.BatchEval)),
		Job:        clock.NearestIndex(now.Add(-th.Job)),
		Deployment: clock.NearestIndex(now.Add(-th.Deployment)),
		Node:       clock.NearestIndex(now.Add(-th.Node)),
		Now:        now,
	}
}
