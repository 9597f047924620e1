package structs

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
