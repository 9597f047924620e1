package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// EvalByID returns an evaluation, or nil.
func (s *reader) EvalByID(ws memdb.WatchSet, id string) (*structs.Evaluation, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableEvals, "id", id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.Evaluation), nil
}

// Evals iterates every evaluation.
func (s *reader) Evals(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableEvals, "id")
}

// EvalsByIDPrefix iterates evaluations whose ID starts with prefix in
// namespace ("*" = all namespaces).
func (s *reader) EvalsByIDPrefix(ws memdb.WatchSet, namespace, prefix string) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return prefixIter(txn, ws, tableEvals, namespace, prefix)
}

// EvalsByJob returns every evaluation of a job.
func (s *reader) EvalsByJob(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Evaluation, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := get(txn, ws, tableEvals, "job", namespace, jobID)
	if err != nil {
		return nil, err
	}
	var out []*structs.Evaluation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.Evaluation))
	}
	return out, nil
}

// UpsertEvals inserts or updates evaluations, updates the queued counts of
// their jobs' summaries and the jobs' status. A successful (complete, no
// failed groups) eval cancels the job's other blocked evals.
func (s *StateStore) UpsertEvals(index uint64, evals []*structs.Evaluation) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	if err := upsertEvalsTxn(txn, index, evals); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

func upsertEvalsTxn(txn *memdb.Txn, index uint64, evals []*structs.Evaluation) error {
	if len(evals) == 0 {
		return nil
	}
	jobs := jobKeys{}
	for _, in := range evals {
		if in == nil || in.ID == "" {
			return fmt.Errorf("state: upsert eval: missing eval or eval ID")
		}
		e := in.Copy()
		raw, err := txn.First(tableEvals, "id", e.ID)
		if err != nil {
			return fmt.Errorf("state: eval lookup: %w", err)
		}
		if raw != nil {
			e.CreateIndex = raw.(*structs.Evaluation).CreateIndex
		} else {
			e.CreateIndex = index
		}
		e.ModifyIndex = index
		if err := summaryQueuedFromEval(txn, index, e); err != nil {
			return err
		}
		if e.Status == structs.EvalStatusComplete && len(e.FailedTGAllocs) == 0 {
			if err := cancelBlockedEvals(txn, index, e); err != nil {
				return err
			}
		}
		if err := txn.Insert(tableEvals, e); err != nil {
			return fmt.Errorf("state: eval insert: %w", err)
		}
		jobs.add(e.Namespace, e.JobID)
	}
	if err := bumpIndex(txn, index, tableEvals); err != nil {
		return err
	}
	return refreshJobStatuses(txn, index, jobs, false)
}

// cancelBlockedEvals cancels the blocked evals of done's job: a successful
// evaluation has placed everything they were waiting to place.
func cancelBlockedEvals(txn *memdb.Txn, index uint64, done *structs.Evaluation) error {
	iter, err := txn.Get(tableEvals, "job", done.Namespace, done.JobID)
	if err != nil {
		return fmt.Errorf("state: eval lookup: %w", err)
	}
	var blocked []*structs.Evaluation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if e := raw.(*structs.Evaluation); e.ID != done.ID && e.Status == structs.EvalStatusBlocked {
			blocked = append(blocked, e)
		}
	}
	for _, b := range blocked {
		c := b.Copy()
		c.Status = structs.EvalStatusCancelled
		c.StatusDescription = fmt.Sprintf("evaluation %q successful", done.ID)
		c.ModifyIndex = index
		c.ModifyTime = done.ModifyTime
		if err := txn.Insert(tableEvals, c); err != nil {
			return fmt.Errorf("state: eval insert: %w", err)
		}
	}
	return nil
}

// DeleteEval removes evaluations and allocations (garbage collection).
// Unknown IDs are ignored.
func (s *StateStore) DeleteEval(index uint64, evals, allocs []string) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	jobs := jobKeys{}
	for _, id := range evals {
		raw, err := txn.First(tableEvals, "id", id)
		if err != nil {
			return fmt.Errorf("state: eval lookup: %w", err)
		}
		if raw == nil {
			continue
		}
		e := raw.(*structs.Evaluation)
		if err := txn.Delete(tableEvals, e); err != nil {
			return fmt.Errorf("state: eval delete: %w", err)
		}
		jobs.add(e.Namespace, e.JobID)
	}
	for _, id := range allocs {
		raw, err := txn.First(tableAllocs, "id", id)
		if err != nil {
			return fmt.Errorf("state: alloc lookup: %w", err)
		}
		if raw == nil {
			continue
		}
		a := raw.(*structs.Allocation)
		if err := txn.Delete(tableAllocs, a); err != nil {
			return fmt.Errorf("state: alloc delete: %w", err)
		}
		if err := deleteAllocServices(txn, index, a.ID); err != nil {
			return err
		}
		// A node's allocs can only shrink here; remember when, so a client
		// whose node lost its last alloc still sees its pull index move
		// (not for a node already gone: its row would outlive it).
		if n, err := nodeLookup(txn, a.NodeID); err != nil {
			return err
		} else if n != nil {
			if err := bumpIndex(txn, index, nodeAllocsDeletedKey(a.NodeID)); err != nil {
				return err
			}
		}
		jobs.add(a.Namespace, a.JobID)
	}
	if err := bumpIndex(txn, index, tableEvals, tableAllocs); err != nil {
		return err
	}
	if err := refreshJobStatuses(txn, index, jobs, true); err != nil {
		return err
	}
	s.commitAllocs(txn)
	return nil
}
