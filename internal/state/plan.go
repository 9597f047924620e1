package state

import (
	"fmt"
	"reflect"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// UpsertPlanResults applies a committed plan in one transaction: the
// deployment and its status updates, stops and preemptions (which may be
// diffs carrying only the fields the plan changes), placements (full allocs;
// Job defaults to req.Job), the plan's eval ModifyIndex and preemption evals.
func (s *StateStore) UpsertPlanResults(index uint64, req *structs.ApplyPlanResultsRequest) error {
	if req == nil {
		return fmt.Errorf("state: upsert plan results: nil request")
	}
	return s.UpsertPlanResultsBatch(index, []*structs.ApplyPlanResultsRequest{req})
}

// UpsertPlanResultsBatch applies several committed plans, in order, in one
// transaction at one index: a later plan sees the earlier ones' writes, and
// if any of them fails nothing is written.
func (s *StateStore) UpsertPlanResultsBatch(index uint64, reqs []*structs.ApplyPlanResultsRequest) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	jobs := jobKeys{}
	for _, req := range reqs {
		if req == nil {
			return fmt.Errorf("state: upsert plan results: nil request")
		}
		if err := upsertPlanResultsTxn(txn, index, req, jobs); err != nil {
			return err
		}
	}
	if err := refreshJobStatuses(txn, index, jobs, false); err != nil {
		return err
	}
	s.commitAllocs(txn)
	return nil
}

func upsertPlanResultsTxn(txn *memdb.Txn, index uint64, req *structs.ApplyPlanResultsRequest, jobs jobKeys) error {
	if req.Deployment != nil {
		if err := upsertDeploymentTxn(txn, index, req.Deployment); err != nil {
			return err
		}
		jobs.add(req.Deployment.Namespace, req.Deployment.JobID)
	}
	for _, u := range req.DeploymentUpdates {
		if u == nil {
			continue
		}
		if err := applyDeploymentUpdate(txn, index, u, jobs); err != nil {
			return err
		}
	}

	// Each job's summary is copied once for the plan's allocations and
	// written after them (nothing in between reads it).
	sums := newDerivedRows()
	for _, diff := range req.AllocsStopped {
		if err := applyStopDiff(txn, index, diff, false, jobs, sums); err != nil {
			return err
		}
	}
	for _, diff := range req.AllocsPreempted {
		if err := applyStopDiff(txn, index, diff, true, jobs, sums); err != nil {
			return err
		}
	}
	// Placements point at the stored job version when they are of it, not
	// at the entry's decoded copy: one job object per version, however many
	// entries and allocations.
	planJob, err := canonicalJob(txn, req.Job)
	if err != nil {
		return err
	}
	for _, in := range req.Alloc {
		if in == nil {
			continue
		}
		job := in.Job
		if job == nil {
			job = planJob
		} else if job != planJob {
			if job, err = canonicalJob(txn, job); err != nil {
				return err
			}
		}
		if err := upsertAllocTxn(txn, index, in, job, jobs, sums); err != nil {
			return err
		}
	}
	if err := sums.write(txn, index); err != nil {
		return err
	}
	if len(req.AllocsStopped)+len(req.AllocsPreempted)+len(req.Alloc) > 0 {
		if err := bumpIndex(txn, index, tableAllocs); err != nil {
			return err
		}
	}

	if req.EvalID != "" {
		raw, err := txn.First(tableEvals, "id", req.EvalID)
		if err != nil {
			return fmt.Errorf("state: eval lookup: %w", err)
		}
		if raw != nil {
			e := raw.(*structs.Evaluation).Copy()
			e.ModifyIndex = index
			if err := txn.Insert(tableEvals, e); err != nil {
				return fmt.Errorf("state: eval insert: %w", err)
			}
			if err := bumpIndex(txn, index, tableEvals); err != nil {
				return err
			}
		}
	}
	if err := upsertEvalsTxn(txn, index, req.PreemptionEvals); err != nil {
		return err
	}
	if req.Job != nil {
		jobs.add(req.Job.Namespace, req.Job.ID)
	}
	return nil
}

// applyStopDiff merges a stop (or preemption) onto the stored allocation.
// Unknown allocations are ignored.
func applyStopDiff(txn *memdb.Txn, index uint64, diff *structs.Allocation, preempted bool, jobs jobKeys, sums *derivedRows) error {
	if diff == nil {
		return nil
	}
	ex, err := allocLookup(txn, diff.ID)
	if err != nil || ex == nil {
		return err
	}
	c := *ex
	if diff.DesiredStatus != "" {
		c.DesiredStatus = diff.DesiredStatus
	} else {
		c.DesiredStatus = structs.AllocDesiredStatusStop
	}
	c.DesiredDescription = diff.DesiredDescription
	if diff.ClientStatus != "" {
		c.ClientStatus = diff.ClientStatus
	}
	if diff.FollowupEvalID != "" {
		c.FollowupEvalID = diff.FollowupEvalID
	}
	if diff.ModifyTime != 0 {
		c.ModifyTime = diff.ModifyTime
	}
	mergeTransition(&c.DesiredTransition, diff.DesiredTransition)
	if preempted {
		c.DesiredStatus = structs.AllocDesiredStatusEvict
		if diff.PreemptedByAllocation != "" {
			c.PreemptedByAllocation = diff.PreemptedByAllocation
		}
	}
	c.ModifyIndex = index
	c.AllocModifyIndex = index
	return writeAlloc(txn, index, ex, &c, jobs, sums)
}

// mergeTransition sets the transition flags the diff carries.
func mergeTransition(dst *structs.DesiredTransition, src structs.DesiredTransition) {
	if src.Migrate != nil {
		dst.Migrate = src.Migrate
	}
	if src.Reschedule != nil {
		dst.Reschedule = src.Reschedule
	}
	if src.ForceReschedule != nil {
		dst.ForceReschedule = src.ForceReschedule
	}
	if src.NoShutdownDelay != nil {
		dst.NoShutdownDelay = src.NoShutdownDelay
	}
	if src.MigrateDisablePlacement != nil {
		dst.MigrateDisablePlacement = src.MigrateDisablePlacement
	}
}

// canonicalJob returns the stored object of j's job version (the current job
// or its entry in the version table) when it is the same version, else j.
func canonicalJob(txn *memdb.Txn, j *structs.Job) (*structs.Job, error) {
	if j == nil {
		return nil, nil
	}
	ns := j.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	raw, err := txn.First(tableJobs, "id", ns, j.ID)
	if err != nil {
		return nil, fmt.Errorf("state: job lookup: %w", err)
	}
	if raw != nil && sameCurrentJob(raw.(*structs.Job), j) {
		return raw.(*structs.Job), nil
	}
	raw, err = txn.First(tableJobVersion, "id", ns, j.ID, j.Version)
	if err != nil {
		return nil, fmt.Errorf("state: job version lookup: %w", err)
	}
	if raw != nil && sameJobVersion(raw.(*structs.Job), j) {
		return raw.(*structs.Job), nil
	}
	return j, nil
}

// sameCurrentJob reports whether j is the stored current job row cur. Every
// write of a current row sets its ModifyIndex to the entry's index, so equal
// indexes mean equal rows, except within one entry: the FSM writes a
// registered job and then, in a second transaction at the same index, its
// status, so a scheduler's snapshot between the two holds the same indexes
// with another Status. Those fields are compared too; the contents are not
// (reflect.DeepEqual of a job was 3% of the server's CPU with many small
// jobs, one plan each).
func sameCurrentJob(cur, j *structs.Job) bool {
	return cur == j || cur != nil && j != nil && cur.Namespace == j.Namespace && cur.ID == j.ID &&
		cur.Version == j.Version && cur.JobModifyIndex == j.JobModifyIndex && cur.CreateIndex == j.CreateIndex &&
		cur.ModifyIndex == j.ModifyIndex && cur.Status == j.Status && cur.Stable == j.Stable
}

// sameJobVersion reports whether a and b are equal objects of one job
// version. The indexes are compared first (cheap, and enough to tell most
// versions apart); the contents too, because some writes (stability, version
// tags) change a version's row without bumping its ModifyIndex.
func sameJobVersion(a, b *structs.Job) bool {
	if a == b {
		return true
	}
	return a != nil && b != nil && a.Namespace == b.Namespace && a.ID == b.ID && a.Version == b.Version &&
		a.JobModifyIndex == b.JobModifyIndex && a.CreateIndex == b.CreateIndex && a.ModifyIndex == b.ModifyIndex &&
		reflect.DeepEqual(a, b)
}
