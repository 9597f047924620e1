package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// Writes to stored job versions that do not change a spec: stability, version
// tags, and the scaling events recorded next to a job. Stored objects are
// never modified in place: each write inserts a copy.

// UpdateJobStability marks one tracked version of a job stable or unstable.
// When it is the current version the job itself changes too (ModifyIndex
// moves, JobModifyIndex does not: the spec is the same).
func (s *StateStore) UpdateJobStability(index uint64, namespace, id string, version uint64, stable bool) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	err := updateVersion(txn, index, namespace, id, version, func(j *structs.Job) { j.Stable = stable })
	if err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// UpdateJobVersionTag tags a tracked version (Unset false) or removes the
// tag named req.Name (Unset true). A tag name is unique among a job's
// versions. Tagged versions are never pruned.
func (s *StateStore) UpdateJobVersionTag(index uint64, namespace string, req *structs.JobTagRequest) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	versions, err := jobVersions(txn, nil, namespace, req.JobID)
	if err != nil {
		return err
	}
	if len(versions) == 0 {
		return fmt.Errorf("job %q not found", req.JobID)
	}
	var tagged *structs.Job
	for _, v := range versions {
		if v.VersionTag != nil && v.VersionTag.Name == req.Name {
			tagged = v
		}
	}
	if req.Unset {
		if tagged == nil {
			return fmt.Errorf("tag %q not found on job %q", req.Name, req.JobID)
		}
		err = updateVersion(txn, index, namespace, req.JobID, tagged.Version, func(j *structs.Job) { j.VersionTag = nil })
	} else {
		if tagged != nil && tagged.Version != req.Version {
			return fmt.Errorf("tag %q already exists on a different version of job %q", req.Name, req.JobID)
		}
		tag := *req.Tag
		err = updateVersion(txn, index, namespace, req.JobID, req.Version, func(j *structs.Job) { j.VersionTag = &tag })
	}
	if err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// updateVersion applies mut to a copy of one tracked version and, when it is
// the current version, to a copy of the job.
func updateVersion(txn *memdb.Txn, index uint64, namespace, id string, version uint64, mut func(*structs.Job)) error {
	raw, err := txn.First(tableJobVersion, "id", namespace, id, version)
	if err != nil {
		return fmt.Errorf("state: job version lookup: %w", err)
	}
	if raw == nil {
		return fmt.Errorf("job %q at version %d not found", id, version)
	}
	v := *raw.(*structs.Job)
	mut(&v)
	cur, err := txn.First(tableJobs, "id", namespace, id)
	if err != nil {
		return fmt.Errorf("state: job lookup: %w", err)
	}
	if cur != nil && cur.(*structs.Job).Version == version {
		j := *cur.(*structs.Job)
		mut(&j)
		j.ModifyIndex = index
		if err := txn.Insert(tableJobs, &j); err != nil {
			return fmt.Errorf("state: job insert: %w", err)
		}
		v = j // the current version and the job are the same object
	}
	if err := txn.Insert(tableJobVersion, &v); err != nil {
		return fmt.Errorf("state: job version insert: %w", err)
	}
	return bumpIndex(txn, index, tableJobs, tableJobVersion)
}

// UpsertScalingEvent records one scaling event of a job's group, newest
// first, keeping structs.JobTrackedScalingEvents per group.
func (s *StateStore) UpsertScalingEvent(index uint64, req *structs.ScalingEventRequest) error {
	if req.ScalingEvent == nil {
		return fmt.Errorf("state: scaling event missing")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()
	ns := req.Namespace
	if ns == "" {
		ns = structs.DefaultNamespace
	}
	out := &structs.JobScalingEvents{Namespace: ns, JobID: req.JobID, ScalingEvents: map[string][]*structs.ScalingEvent{}}
	raw, err := txn.First(tableScalingEvent, "id", ns, req.JobID)
	if err != nil {
		return fmt.Errorf("state: scaling event lookup: %w", err)
	}
	if raw != nil {
		for g, evs := range raw.(*structs.JobScalingEvents).ScalingEvents {
			out.ScalingEvents[g] = evs
		}
	}
	ev := *req.ScalingEvent
	ev.CreateIndex = index
	evs := append([]*structs.ScalingEvent{&ev}, out.ScalingEvents[req.TaskGroup]...)
	if len(evs) > structs.JobTrackedScalingEvents {
		evs = evs[:structs.JobTrackedScalingEvents]
	}
	out.ScalingEvents[req.TaskGroup] = evs
	out.ModifyIndex = index
	if err := txn.Insert(tableScalingEvent, out); err != nil {
		return fmt.Errorf("state: scaling event insert: %w", err)
	}
	if err := bumpIndex(txn, index, tableScalingEvent); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// ScalingEventsByJob returns a job's recorded scaling events, or nil.
func (s *reader) ScalingEventsByJob(ws memdb.WatchSet, namespace, id string) (*structs.JobScalingEvents, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableScalingEvent, "id", namespace, id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.JobScalingEvents), nil
}

// ScalingEvents iterates every job's scaling events (used by FSM snapshots).
func (s *reader) ScalingEvents(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableScalingEvent, "id")
}
