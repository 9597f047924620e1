package state

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// JobByID returns the current version of a job, or nil.
func (s *reader) JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableJobs, "id", namespace, id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.Job), nil
}

// Jobs iterates every job of every namespace.
func (s *reader) Jobs(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableJobs, "id")
}

// JobsByNamespace iterates the jobs of one namespace.
func (s *reader) JobsByNamespace(ws memdb.WatchSet, namespace string) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableJobs, "namespace", namespace)
}

// JobsByIDPrefix iterates jobs whose ID starts with prefix; namespace "*"
// searches all namespaces.
func (s *reader) JobsByIDPrefix(ws memdb.WatchSet, namespace, prefix string) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	if namespace == "*" {
		iter, err := get(txn, ws, tableJobs, "id")
		if err != nil {
			return nil, err
		}
		return memdb.NewFilterIterator(iter, func(raw any) bool {
			return !strings.HasPrefix(raw.(*structs.Job).ID, prefix)
		}), nil
	}
	return get(txn, ws, tableJobs, "id_prefix", namespace, prefix)
}

// JobVersionsByID returns the tracked versions of a job, newest first.
func (s *reader) JobVersionsByID(ws memdb.WatchSet, namespace, id string) ([]*structs.Job, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	return jobVersions(txn, ws, namespace, id)
}

func jobVersions(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) ([]*structs.Job, error) {
	iter, err := get(txn, ws, tableJobVersion, "id_prefix", namespace, id)
	if err != nil {
		return nil, err
	}
	var out []*structs.Job
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if j := raw.(*structs.Job); j.ID == id {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version > out[j].Version })
	return out, nil
}

// JobByIDAndVersion returns one tracked version of a job, or nil.
func (s *reader) JobByIDAndVersion(ws memdb.WatchSet, namespace, id string, version uint64) (*structs.Job, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableJobVersion, "id", namespace, id, version)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.Job), nil
}

// JobVersions iterates every tracked job version (used by FSM snapshots).
func (s *reader) JobVersions(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableJobVersion, "id")
}

// UpsertJob registers a job or a new version of it. A spec change bumps
// Version and JobModifyIndex; an identical spec only bumps ModifyIndex. The
// store keeps the last structs.JobTrackedVersions versions (tagged versions
// are never pruned), the job's summary and its status. sub may be nil. The
// store keeps job (and sub) by reference: callers must not modify them after.
func (s *StateStore) UpsertJob(index uint64, sub *structs.JobSubmission, job *structs.Job) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	if err := upsertJobTxn(txn, index, sub, job); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

func upsertJobTxn(txn *memdb.Txn, index uint64, sub *structs.JobSubmission, in *structs.Job) error {
	if in == nil || in.ID == "" {
		return fmt.Errorf("state: upsert job: missing job or job ID")
	}
	j := *in
	if j.Namespace == "" {
		j.Namespace = structs.DefaultNamespace
	}
	raw, err := txn.First(tableJobs, "id", j.Namespace, j.ID)
	if err != nil {
		return fmt.Errorf("state: job lookup: %w", err)
	}
	oldStatus := ""
	if raw != nil {
		ex := raw.(*structs.Job)
		oldStatus = ex.Status
		j.CreateIndex = ex.CreateIndex
		j.ModifyIndex = index
		if specChanged(ex, &j) {
			j.Version = ex.Version + 1
			j.JobModifyIndex = index
		} else {
			j.Version = ex.Version
			j.JobModifyIndex = ex.JobModifyIndex
			j.Stable = ex.Stable
			j.SubmitTime = ex.SubmitTime
			j.VersionTag = ex.VersionTag
			sub = nil // the stored submission already describes this version
		}
	} else {
		j.Version = 0
		j.CreateIndex = index
		j.ModifyIndex = index
		j.JobModifyIndex = index
	}
	j.Status = jobStatus(txn, &j, false)

	if err := txn.Insert(tableJobs, &j); err != nil {
		return fmt.Errorf("state: job insert: %w", err)
	}
	if err := upsertJobVersion(txn, &j); err != nil {
		return err
	}
	if err := ensureJobSummary(txn, index, &j); err != nil {
		return err
	}
	if err := updateParentChildren(txn, index, &j, oldStatus, j.Status); err != nil {
		return err
	}
	if sub != nil {
		if err := upsertSubmission(txn, index, sub, &j); err != nil {
			return err
		}
	}
	if err := syncScalingPolicies(txn, index, &j); err != nil {
		return err
	}
	return bumpIndex(txn, index, tableJobs, tableJobVersion)
}

// upsertJobVersion stores j as its version and prunes old untagged versions.
func upsertJobVersion(txn *memdb.Txn, j *structs.Job) error {
	if err := txn.Insert(tableJobVersion, j); err != nil {
		return fmt.Errorf("state: job version insert: %w", err)
	}
	all, err := jobVersions(txn, nil, j.Namespace, j.ID)
	if err != nil {
		return err
	}
	kept := 0
	for _, v := range all { // newest first
		if v.VersionTag != nil || v.Version == j.Version {
			continue
		}
		kept++
		if kept < structs.JobTrackedVersions {
			continue
		}
		if err := txn.Delete(tableJobVersion, v); err != nil {
			return fmt.Errorf("state: job version prune: %w", err)
		}
		if err := deleteSubmission(txn, v.Namespace, v.ID, v.Version); err != nil {
			return err
		}
	}
	return nil
}

// DeleteJob purges a job, its versions, submissions and summary. Purging an
// unknown job is a no-op.
func (s *StateStore) DeleteJob(index uint64, namespace, id string) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	raw, err := txn.First(tableJobs, "id", namespace, id)
	if err != nil {
		return fmt.Errorf("state: job lookup: %w", err)
	}
	if raw == nil {
		return nil
	}
	if err := deleteJobTxn(txn, index, raw.(*structs.Job)); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// deleteJobTxn purges job (the stored row) with its versions, submissions,
// summary, scaling events and policies, inside txn.
func deleteJobTxn(txn *memdb.Txn, index uint64, job *structs.Job) error {
	namespace, id := job.Namespace, job.ID
	if err := txn.Delete(tableJobs, job); err != nil {
		return fmt.Errorf("state: job delete: %w", err)
	}
	versions, err := jobVersions(txn, nil, namespace, id)
	if err != nil {
		return err
	}
	for _, v := range versions {
		if err := txn.Delete(tableJobVersion, v); err != nil {
			return fmt.Errorf("state: job version delete: %w", err)
		}
		if err := deleteSubmission(txn, namespace, id, v.Version); err != nil {
			return err
		}
	}
	if _, err := txn.DeleteAll(tableJobSummary, "id", namespace, id); err != nil {
		return fmt.Errorf("state: job summary delete: %w", err)
	}
	if _, err := txn.DeleteAll(tableScalingEvent, "id", namespace, id); err != nil {
		return fmt.Errorf("state: scaling events delete: %w", err)
	}
	if err := deleteScalingPolicies(txn, index, namespace, id); err != nil {
		return err
	}
	if err := updateParentChildren(txn, index, job, job.Status, ""); err != nil {
		return err
	}
	return bumpIndex(txn, index, tableJobs, tableJobVersion, tableJobSummary, tableJobSubmission, tableScalingEvent)
}

// specChanged reports whether the user-visible spec differs, ignoring the
// fields the server manages.
func specChanged(a, b *structs.Job) bool { return b.SpecChanged(a) }
