package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// tableJobRestart keeps each job's latest rolling restart (one row per
// job): the active one, or the last one's outcome.
const tableJobRestart = "job_restart"

func jobRestartTable() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableJobRestart,
		Indexes: map[string]*memdb.IndexSchema{
			"id": nsIDIndex("id", nil,
				func(r *structs.JobRestart) string { return r.Namespace },
				func(r *structs.JobRestart) string { return r.JobID }),
		},
	}
}

// JobRestartByJob returns the job's latest rolling restart, or nil. The
// caller must not modify it.
func (s *reader) JobRestartByJob(ws memdb.WatchSet, namespace, jobID string) (*structs.JobRestart, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableJobRestart, "id", namespace, jobID)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.JobRestart), nil
}

// JobRestarts iterates every stored restart (snapshots, the leader's
// resume after it gains leadership).
func (s *reader) JobRestarts(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableJobRestart, "id")
}

// UpsertJobRestart stores a restart's record, replacing the job's previous
// one. CreateIndex is kept when the restart ID is the same.
func (s *StateStore) UpsertJobRestart(index uint64, in *structs.JobRestart) error {
	if in == nil || in.ID == "" || in.JobID == "" {
		return fmt.Errorf("state: upsert job restart: missing restart, its ID or its job ID")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()
	r := in.Copy()
	if r.Namespace == "" {
		r.Namespace = structs.DefaultNamespace
	}
	raw, err := txn.First(tableJobRestart, "id", r.Namespace, r.JobID)
	if err != nil {
		return fmt.Errorf("state: job restart lookup: %w", err)
	}
	if ex, ok := raw.(*structs.JobRestart); ok && ex.ID == r.ID {
		r.CreateIndex = ex.CreateIndex
	} else {
		r.CreateIndex = index
	}
	r.ModifyIndex = index
	if err := txn.Insert(tableJobRestart, r); err != nil {
		return fmt.Errorf("state: job restart insert: %w", err)
	}
	if err := bumpIndex(txn, index, tableJobRestart); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// DeleteJobRestart forgets a job's restart (the job was purged).
func (s *StateStore) DeleteJobRestart(index uint64, namespace, jobID string) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	n, err := txn.DeleteAll(tableJobRestart, "id", namespace, jobID)
	if err != nil {
		return fmt.Errorf("state: job restart delete: %w", err)
	}
	if n == 0 {
		return nil
	}
	if err := bumpIndex(txn, index, tableJobRestart); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// JobRestartRestore loads a restart from a snapshot.
func (r *StateRestore) JobRestartRestore(j *structs.JobRestart) error {
	return r.insert(tableJobRestart, j)
}
