package state

import (
	"fmt"
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// jobStatus derives a job's status from its allocations, deployments and
// evaluations. evalDelete marks a GC of evals: a job left with none is dead.
//
//   - system jobs and periodic/parameterized parents: running, dead if stopped;
//   - running if any allocation of this incarnation is non-terminal or a
//     deployment is active;
//   - pending if any evaluation is not terminal;
//   - dead if it ever had evals or allocs, pending otherwise.
func jobStatus(txn *memdb.Txn, job *structs.Job, evalDelete bool) string {
	if job.Type == structs.JobTypeSystem || job.IsPeriodic() || job.IsParameterized() {
		if job.Stop {
			return structs.JobStatusDead
		}
		return structs.JobStatusRunning
	}
	hasAlloc, hasEval := false, false
	if iter, err := txn.Get(tableAllocs, "job", job.Namespace, job.ID); err == nil {
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			a := raw.(*structs.Allocation)
			if !sameIncarnation(a, job) {
				continue
			}
			hasAlloc = true
			if !a.TerminalStatus() {
				return structs.JobStatusRunning
			}
		}
	}
	if iter, err := txn.Get(tableDeployment, "job", job.Namespace, job.ID); err == nil {
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			d := raw.(*structs.Deployment)
			if (d.JobCreateIndex == 0 || d.JobCreateIndex == job.CreateIndex) && d.Active() {
				return structs.JobStatusRunning
			}
		}
	}
	if iter, err := txn.Get(tableEvals, "job", job.Namespace, job.ID); err == nil {
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			e := raw.(*structs.Evaluation)
			if e.CreateIndex < job.CreateIndex {
				continue // from a purged incarnation of the job
			}
			hasEval = true
			if !e.TerminalStatus() {
				return structs.JobStatusPending
			}
		}
	}
	if evalDelete || hasEval || hasAlloc {
		return structs.JobStatusDead
	}
	return structs.JobStatusPending
}

// sameIncarnation reports whether alloc belongs to job as registered now (a
// purged and re-registered job has a new CreateIndex).
func sameIncarnation(a *structs.Allocation, job *structs.Job) bool {
	return a.Job == nil || a.Job.CreateIndex == job.CreateIndex
}

// jobKeys collects the jobs a write touched, for a status refresh.
type jobKeys map[structs.NamespacedID]struct{}

func (k jobKeys) add(namespace, id string) {
	if id != "" {
		k[structs.NamespacedID{Namespace: namespace, ID: id}] = struct{}{}
	}
}

// refreshJobStatuses recomputes the status of each touched job, writing only
// those that changed. Jobs are visited in sorted order (determinism).
func refreshJobStatuses(txn *memdb.Txn, index uint64, keys jobKeys, evalDelete bool) error {
	sorted := make([]structs.NamespacedID, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].String() < sorted[j].String() })
	for _, k := range sorted {
		if err := refreshJobStatus(txn, index, k.Namespace, k.ID, evalDelete); err != nil {
			return err
		}
	}
	return nil
}

func refreshJobStatus(txn *memdb.Txn, index uint64, namespace, id string, evalDelete bool) error {
	raw, err := txn.First(tableJobs, "id", namespace, id)
	if err != nil {
		return fmt.Errorf("state: job lookup: %w", err)
	}
	if raw == nil {
		return nil
	}
	job := raw.(*structs.Job)
	status := jobStatus(txn, job, evalDelete)
	if status == job.Status {
		return nil
	}
	c := *job
	c.Status = status
	c.ModifyIndex = index
	if err := txn.Insert(tableJobs, &c); err != nil {
		return fmt.Errorf("state: job insert: %w", err)
	}
	// Keep the current version's row identical to the job.
	v, err := txn.First(tableJobVersion, "id", c.Namespace, c.ID, c.Version)
	if err != nil {
		return fmt.Errorf("state: job version lookup: %w", err)
	}
	if v != nil {
		if err := txn.Insert(tableJobVersion, &c); err != nil {
			return fmt.Errorf("state: job version insert: %w", err)
		}
	}
	if err := updateParentChildren(txn, index, &c, job.Status, status); err != nil {
		return err
	}
	return bumpIndex(txn, index, tableJobs, tableJobVersion)
}
