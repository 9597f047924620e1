package structs

import "time"

// SnapshotSaveRequest asks a server for a snapshot archive
// (GET /v1/operator/snapshot). Consistent unless AllowStale: then any
// server answers with its own state.
type SnapshotSaveRequest struct {
	QueryOptions
}

// SnapshotSaveResponse carries the archive (internal/snapshot's format)
// and the Raft index it was taken at.
type SnapshotSaveResponse struct {
	Archive []byte
	// SnapshotIndex is the Raft index of the state in Archive.
	SnapshotIndex uint64
	QueryMeta
}

// SnapshotRestoreRequest replaces the cluster's state with an archive
// (PUT /v1/operator/snapshot). Served by the leader.
type SnapshotRestoreRequest struct {
	Archive []byte
	WriteRequest
}

// SnapshotOpWait is how long a snapshot save or restore may take on the
// leader beyond an ordinary call (a server forwarding one allows it).
const SnapshotOpWait = 2 * time.Minute

// ServerWait: writing a large state out takes a while.
func (r *SnapshotSaveRequest) ServerWait() time.Duration { return SnapshotOpWait }

// ServerWait: the leader installs the archive, with its own timeout.
func (r *SnapshotRestoreRequest) ServerWait() time.Duration { return SnapshotOpWait }
