package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// StateRestore bulk-loads a snapshot into a fresh store in one write
// transaction. Objects are inserted as they are: nothing is derived or
// re-indexed. Commit makes the load visible; Abort discards it.
type StateRestore struct {
	txn  *memdb.Txn
	jobs map[restoredJobKey]*structs.Job // AllocRestore's shared job copies
	memo *nodeAllocsMemo
}

// Restore starts a bulk load. Use it on a store nobody reads yet.
func (s *StateStore) Restore() (*StateRestore, error) {
	// Nobody waits on this store yet: no change tracking.
	return &StateRestore{txn: s.db.MemDB.Txn(true), memo: s.nodeAllocs}, nil
}

// Commit makes the restored objects visible. The load is numbered as an
// alloc write (node_allocs_seq.go), so per-node reads memoised before it,
// if anyone read the store, are not taken for its contents.
func (r *StateRestore) Commit() error {
	seq, err := nextAllocSeq(r.txn)
	if err != nil {
		r.txn.Abort()
		return err
	}
	if r.memo != nil {
		r.memo.restoring(seq)
	}
	r.txn.Commit()
	return nil
}

// Abort discards the restore.
func (r *StateRestore) Abort() { r.txn.Abort() }

func (r *StateRestore) insert(table string, obj any) error {
	if err := r.txn.Insert(table, obj); err != nil {
		return fmt.Errorf("state: restore %s: %w", table, err)
	}
	return nil
}

// JobRestore loads a job.
func (r *StateRestore) JobRestore(j *structs.Job) error { return r.insert(tableJobs, j) }

// JobVersionRestore loads a job version.
func (r *StateRestore) JobVersionRestore(j *structs.Job) error {
	return r.insert(tableJobVersion, j)
}

// JobSummaryRestore loads a job summary.
func (r *StateRestore) JobSummaryRestore(s *structs.JobSummary) error {
	return r.insert(tableJobSummary, s)
}

// JobSubmissionRestore loads a job submission.
func (r *StateRestore) JobSubmissionRestore(s *structs.JobSubmission) error {
	return r.insert(tableJobSubmission, s)
}

// EvalRestore loads an evaluation.
func (r *StateRestore) EvalRestore(e *structs.Evaluation) error { return r.insert(tableEvals, e) }

// AllocRestore loads an allocation.
// Its job, decoded as a copy per allocation, is replaced by the restored
// object of the same job version, so a restored store holds one job object
// per version as a live one does (jobs and versions are restored first).
// Allocations of a job state no longer stored (the job's status changed
// since) share the first decoded copy.
func (r *StateRestore) AllocRestore(a *structs.Allocation) error {
	if a.Job != nil {
		j, err := canonicalJob(r.txn, a.Job)
		if err != nil {
			return err
		}
		if j == a.Job {
			key := restoredJobKey{j.Namespace, j.ID, j.Version, j.JobModifyIndex, j.CreateIndex, j.ModifyIndex}
			if seen, ok := r.jobs[key]; ok && sameJobVersion(seen, j) {
				j = seen
			} else if !ok {
				if r.jobs == nil {
					r.jobs = map[restoredJobKey]*structs.Job{}
				}
				r.jobs[key] = j
			}
		}
		a.Job = j
	}
	return r.insert(tableAllocs, a)
}

type restoredJobKey struct {
	ns, id                              string
	version                             uint64
	jobModifyIndex, create, modifyIndex uint64
}

// NodeRestore loads a node.
func (r *StateRestore) NodeRestore(n *structs.Node) error { return r.insert(tableNodes, n) }

// DeploymentRestore loads a deployment.
func (r *StateRestore) DeploymentRestore(d *structs.Deployment) error {
	return r.insert(tableDeployment, d)
}

// NamespaceRestore loads a namespace.
func (r *StateRestore) NamespaceRestore(n *structs.Namespace) error {
	return r.insert(tableNamespaces, n)
}

// RootKeyRestore loads a keyring root key.
func (r *StateRestore) RootKeyRestore(k *structs.RootKey) error { return r.insert(tableRootKeys, k) }

// ClusterMetadataRestore loads the cluster metadata.
func (r *StateRestore) ClusterMetadataRestore(m *structs.ClusterMetadata) error {
	return r.insert(tableClusterMeta, m)
}

// IndexRestore sets the last-write index of a table.
func (r *StateRestore) IndexRestore(table string, idx uint64) error {
	return r.insert(tableIndex, &IndexEntry{Key: table, Value: idx})
}

// ScalingEventsRestore loads a job's scaling events.
func (r *StateRestore) ScalingEventsRestore(e *structs.JobScalingEvents) error {
	return r.insert(tableScalingEvent, e)
}
