package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// JobSubmission returns the source submitted for one job version, or nil.
func (s *reader) JobSubmission(ws memdb.WatchSet, namespace, jobID string, version uint64) (*structs.JobSubmission, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableJobSubmission, "id", namespace, jobID, version)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.JobSubmission), nil
}

// JobSubmissions iterates every stored submission (used by FSM snapshots).
func (s *reader) JobSubmissions(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableJobSubmission, "id")
}

// upsertSubmission stores sub as the source of job's current version.
func upsertSubmission(txn *memdb.Txn, index uint64, in *structs.JobSubmission, job *structs.Job) error {
	sub := *in
	sub.Namespace = job.Namespace
	sub.JobID = job.ID
	sub.Version = job.Version
	sub.JobModifyIndex = job.JobModifyIndex
	if err := txn.Insert(tableJobSubmission, &sub); err != nil {
		return fmt.Errorf("state: job submission insert: %w", err)
	}
	return bumpIndex(txn, index, tableJobSubmission)
}

func deleteSubmission(txn *memdb.Txn, namespace, jobID string, version uint64) error {
	if _, err := txn.DeleteAll(tableJobSubmission, "id", namespace, jobID, version); err != nil {
		return fmt.Errorf("state: job submission delete: %w", err)
	}
	return nil
}
