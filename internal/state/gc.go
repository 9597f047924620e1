package state

import (
	"fmt"
	"maps"
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// The writes of garbage collection. The collector (internal/server/coregc)
// decides from a snapshot what may go; these writes re-check, at apply time,
// what could have changed since that read, so a collection committed late
// never removes something that came back to life: a job written again
// (re-registered) is kept, and so is a node no longer down or holding an
// allocation that is not terminal. Evaluations, allocations and deployments
// the collector picks are terminal, and terminal is final.

// DeleteDeployments removes deployments; unknown IDs are ignored.
func (s *StateStore) DeleteDeployments(index uint64, ids []string) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	deleted := false
	for _, id := range ids {
		raw, err := txn.First(tableDeployment, "id", id)
		if err != nil {
			return fmt.Errorf("state: deployment lookup: %w", err)
		}
		if raw == nil {
			continue
		}
		if err := txn.Delete(tableDeployment, raw); err != nil {
			return fmt.Errorf("state: deployment delete: %w", err)
		}
		deleted = true
	}
	if !deleted {
		return nil
	}
	if err := bumpIndex(txn, index, tableDeployment); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// DeleteJobsGC purges the jobs of a GC batch that are still as the
// collector saw them (same ModifyIndex) and returns the purged ones.
func (s *StateStore) DeleteJobsGC(index uint64, jobs []*structs.JobBatchDeregisterJob) ([]structs.NamespacedID, error) {
	txn := s.db.Txn(true)
	defer txn.Abort()
	var purged []structs.NamespacedID
	for _, j := range jobs {
		if j == nil {
			continue
		}
		ns := j.Namespace
		if ns == "" {
			ns = structs.DefaultNamespace
		}
		raw, err := txn.First(tableJobs, "id", ns, j.ID)
		if err != nil {
			return nil, fmt.Errorf("state: job lookup: %w", err)
		}
		if raw == nil || raw.(*structs.Job).ModifyIndex != j.ModifyIndex {
			continue
		}
		if err := deleteJobTxn(txn, index, raw.(*structs.Job)); err != nil {
			return nil, err
		}
		purged = append(purged, structs.NamespacedID{Namespace: ns, ID: j.ID})
	}
	if len(purged) == 0 {
		return nil, nil
	}
	txn.Commit()
	return purged, nil
}

// DeleteNodesGC removes the nodes of a GC batch that are still down and hold
// no allocation that is not terminal, and returns their IDs.
func (s *StateStore) DeleteNodesGC(index uint64, ids []string) ([]string, error) {
	txn := s.db.Txn(true)
	defer txn.Abort()
	var deleted []string
	for _, id := range ids {
		n, err := nodeLookup(txn, id)
		if err != nil {
			return nil, err
		}
		if n == nil || n.Status != structs.NodeStatusDown {
			continue
		}
		live, err := txn.First(tableAllocs, "node_terminal", id, false)
		if err != nil {
			return nil, fmt.Errorf("state: alloc lookup: %w", err)
		}
		if live != nil {
			continue
		}
		if err := txn.Delete(tableNodes, n); err != nil {
			return nil, fmt.Errorf("state: node delete: %w", err)
		}
		if _, err := txn.DeleteAll(tableIndex, "id", nodeAllocsDeletedKey(id)); err != nil {
			return nil, fmt.Errorf("state: index delete: %w", err)
		}
		deleted = append(deleted, id)
	}
	if len(deleted) == 0 {
		return nil, nil
	}
	if err := bumpIndex(txn, index, tableNodes); err != nil {
		return nil, err
	}
	txn.Commit()
	return deleted, nil
}

// UpdateJobSummariesFromAllocs recounts every job's summary from its allocations
// of the job's current incarnation (queued counts are kept: they come from
// evaluations) and every parent's children counts from its children's
// statuses. Only summaries that differ are written.
func (s *StateStore) UpdateJobSummariesFromAllocs(index uint64) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	iter, err := txn.Get(tableJobs, "id")
	if err != nil {
		return fmt.Errorf("state: job list: %w", err)
	}
	var jobs []*structs.Job
	children := map[structs.NamespacedID]*structs.JobChildrenSummary{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		j := raw.(*structs.Job)
		jobs = append(jobs, j)
		if j.ParentID == "" {
			continue
		}
		k := structs.NamespacedID{Namespace: j.Namespace, ID: j.ParentID}
		c := children[k]
		if c == nil {
			c = &structs.JobChildrenSummary{}
			children[k] = c
		}
		switch j.Status {
		case structs.JobStatusPending:
			c.Pending++
		case structs.JobStatusRunning:
			c.Running++
		case structs.JobStatusDead:
			c.Dead++
		}
	}
	// The jobs table iterates in (namespace, ID) order: deterministic.
	changed := false
	for _, j := range jobs {
		ex, err := summaryFor(txn, j.Namespace, j.ID)
		if err != nil {
			return err
		}
		sum := &structs.JobSummary{
			JobID: j.ID, Namespace: j.Namespace, CreateIndex: index,
			Summary: make(map[string]structs.TaskGroupSummary, len(j.TaskGroups)),
		}
		if ex != nil {
			sum.CreateIndex = ex.CreateIndex
		}
		for _, tg := range j.TaskGroups {
			var ts structs.TaskGroupSummary
			if ex != nil {
				ts.Queued = ex.Summary[tg.Name].Queued
			}
			sum.Summary[tg.Name] = ts
		}
		allocs, err := txn.Get(tableAllocs, "job", j.Namespace, j.ID)
		if err != nil {
			return fmt.Errorf("state: alloc lookup: %w", err)
		}
		for raw := allocs.Next(); raw != nil; raw = allocs.Next() {
			a := raw.(*structs.Allocation)
			if !sameIncarnation(a, j) {
				continue
			}
			tg, ok := sum.Summary[a.TaskGroup]
			if !ok {
				continue
			}
			if p := countOf(&tg, a.ClientStatus); p != nil {
				*p++
			}
			sum.Summary[a.TaskGroup] = tg
		}
		if j.IsPeriodic() || j.IsParameterized() {
			sum.Children = &structs.JobChildrenSummary{}
			if c := children[structs.NamespacedID{Namespace: j.Namespace, ID: j.ID}]; c != nil {
				sum.Children = c
			}
		} else if ex != nil && ex.Children != nil {
			sum.Children = ex.Children
		}
		if ex != nil && sameSummary(ex, sum) {
			continue
		}
		if err := putSummary(txn, index, sum); err != nil {
			return err
		}
		changed = true
	}
	if !changed {
		return nil
	}
	txn.Commit()
	return nil
}

func sameSummary(a, b *structs.JobSummary) bool {
	if !maps.Equal(a.Summary, b.Summary) {
		return false
	}
	if (a.Children == nil) != (b.Children == nil) {
		return false
	}
	return a.Children == nil || *a.Children == *b.Children
}

// GCAllocsByJob returns every allocation stored under a job's ID, of any
// incarnation, grouped by the evaluation that wrote it last: what the
// collector needs to decide about a job's evaluations in one read.
func (s *reader) GCAllocsByJob(ws memdb.WatchSet, namespace, jobID string) (map[string][]*structs.Allocation, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := get(txn, ws, tableAllocs, "job", namespace, jobID)
	if err != nil {
		return nil, err
	}
	out := map[string][]*structs.Allocation{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		a := raw.(*structs.Allocation)
		out[a.EvalID] = append(out[a.EvalID], a)
	}
	return out, nil
}

// EvalsByJobKey lists the (namespace, job) keys of all evaluations, sorted,
// with their evaluations: the collector walks evaluations job by job.
func (s *reader) EvalsByJobKey(ws memdb.WatchSet) ([]structs.NamespacedID, map[structs.NamespacedID][]*structs.Evaluation, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := get(txn, ws, tableEvals, "id")
	if err != nil {
		return nil, nil, err
	}
	byJob := map[structs.NamespacedID][]*structs.Evaluation{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		e := raw.(*structs.Evaluation)
		k := structs.NamespacedID{Namespace: e.Namespace, ID: e.JobID}
		byJob[k] = append(byJob[k], e)
	}
	keys := make([]structs.NamespacedID, 0, len(byJob))
	for k := range byJob {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Namespace != keys[j].Namespace {
			return keys[i].Namespace < keys[j].Namespace
		}
		return keys[i].ID < keys[j].ID
	})
	return keys, byJob, nil
}
