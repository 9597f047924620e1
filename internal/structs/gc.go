package structs

// Raft entries of garbage collection and summary repair. Numbers are
// Nomad's, so a log reads the same. (EvalDeleteRequestType, 7, removes
// evaluations and allocations; DeploymentDeleteRequestType, 17, deployments.)
const (
	// ReconcileJobSummariesRequestType carries ReconcileJobSummariesRequest:
	// every job's summary is recounted from its allocations.
	ReconcileJobSummariesRequestType MessageType = 10
	// JobBatchDeregisterRequestType carries JobBatchDeregisterRequest: the
	// core GC purges dead jobs with it.
	JobBatchDeregisterRequestType MessageType = 26
	// NodeBatchDeregisterRequestType carries NodeBatchDeregisterRequest: the
	// core GC removes down nodes with it.
	NodeBatchDeregisterRequestType MessageType = 31
)

// ReconcileJobSummariesRequest recounts every job summary
// (`PUT /v1/system/reconcile/summaries`).
type ReconcileJobSummariesRequest struct {
	WriteRequest
}

// JobBatchDeregisterRequest purges jobs the garbage collector found dead.
// Each job names the ModifyIndex it was seen at: a job written since (a new
// registration under the same ID) is left alone, so GC can never purge a
// job that came back to life between the leader's read and the commit.
type JobBatchDeregisterRequest struct {
	Jobs []*JobBatchDeregisterJob
	WriteRequest
}

// JobBatchDeregisterJob is one job of a JobBatchDeregisterRequest.
type JobBatchDeregisterJob struct {
	Namespace   string
	ID          string
	ModifyIndex uint64
}

// NodeBatchDeregisterRequest removes nodes the garbage collector found down.
// A node that is no longer down when the entry applies, or that holds an
// allocation that is not terminal, is kept.
type NodeBatchDeregisterRequest struct {
	NodeIDs []string
	WriteRequest
}

// SystemGCRequest forces a garbage collection of everything eligible, all
// thresholds ignored (`PUT /v1/system/gc`).
type SystemGCRequest struct {
	WriteRequest
}

// SystemGCResponse reports what a forced collection removed.
type SystemGCResponse struct {
	Evals       int
	Allocs      int
	Jobs        int
	Deployments int
	Nodes       int
	WriteMeta
}

// EvalCountRequest counts evaluations (`GET /v1/evaluations/count`),
// honouring the list's prefix and filter.
type EvalCountRequest struct {
	QueryOptions
}

// EvalCountResponse is the count; its JSON is api.EvalCountResponse.
type EvalCountResponse struct {
	Count int
	QueryMeta
}
