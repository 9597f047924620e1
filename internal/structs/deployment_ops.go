package structs

import "time"

// Raft entries that move deployments and allocations' desired transitions.
// Numbers match Nomad's so a log reads the same.
const (
	// DeploymentStatusUpdateRequestType carries DeploymentStatusUpdateRequest:
	// pause, resume, fail (with an optional rollback job) and success.
	DeploymentStatusUpdateRequestType MessageType = 14
	// DeploymentPromoteRequestType carries ApplyDeploymentPromoteRequest.
	DeploymentPromoteRequestType MessageType = 15
	// DeploymentAllocHealthRequestType carries ApplyDeploymentAllocHealthRequest.
	DeploymentAllocHealthRequestType MessageType = 16
	// DeploymentDeleteRequestType carries DeploymentDeleteRequest (GC).
	DeploymentDeleteRequestType MessageType = 17
	// AllocUpdateDesiredTransitionRequestType carries
	// AllocUpdateDesiredTransitionRequest (deployment watcher, drainer).
	AllocUpdateDesiredTransitionRequestType MessageType = 27
)

// Deployment statuses beyond the common five (multi-region flows only; a
// single-region cluster never enters them but decodes them).
const (
	DeploymentStatusInitializing = "initializing"
	DeploymentStatusPending      = "pending"
	DeploymentStatusBlocked      = "blocked"
	DeploymentStatusUnblocking   = "unblocking"
)

// DeploymentStatusUpdateRequest changes a deployment's status in one Raft
// entry, optionally registering a job (auto-revert) and creating an eval so
// the scheduler acts on the change.
type DeploymentStatusUpdateRequest struct {
	Eval             *Evaluation
	DeploymentUpdate *DeploymentStatusUpdate
	Job              *Job
	WriteRequest
}

// DeploymentPromoteRequest promotes the canaries of all (All) or the named
// groups of a deployment.
type DeploymentPromoteRequest struct {
	DeploymentID string
	All          bool
	Groups       []string
	WriteRequest
}

// ApplyDeploymentPromoteRequest is the Raft entry of a promotion: the request
// and the eval that rolls out the rest.
type ApplyDeploymentPromoteRequest struct {
	DeploymentPromoteRequest
	Eval *Evaluation
}

// DeploymentPauseRequest pauses (Pause) or resumes a deployment.
type DeploymentPauseRequest struct {
	DeploymentID string
	Pause        bool
	WriteRequest
}

// DeploymentRunRequest, DeploymentUnblockRequest and DeploymentCancelRequest
// are the multi-region operations; a single-region deployment refuses them.
type DeploymentRunRequest struct {
	DeploymentID string
	WriteRequest
}

// DeploymentUnblockRequest: see DeploymentRunRequest.
type DeploymentUnblockRequest struct {
	DeploymentID string
	WriteRequest
}

// DeploymentCancelRequest: see DeploymentRunRequest.
type DeploymentCancelRequest struct {
	DeploymentID string
	WriteRequest
}

// DeploymentFailRequest fails a deployment (rolling back if its groups
// auto-revert).
type DeploymentFailRequest struct {
	DeploymentID string
	WriteRequest
}

// DeploymentAllocHealthRequest sets allocations' health by hand (groups
// with health_check = "manual", or an operator's override).
type DeploymentAllocHealthRequest struct {
	DeploymentID           string
	HealthyAllocationIDs   []string
	UnhealthyAllocationIDs []string
	WriteRequest
}

// ApplyDeploymentAllocHealthRequest is the Raft entry of a health change:
// the request, when it happened, and what follows from it (a failed
// deployment, a rollback job, an eval).
type ApplyDeploymentAllocHealthRequest struct {
	DeploymentAllocHealthRequest
	Timestamp        time.Time
	DeploymentUpdate *DeploymentStatusUpdate
	Job              *Job
	Eval             *Evaluation
}

// DeploymentDeleteRequest removes deployments (garbage collection).
type DeploymentDeleteRequest struct {
	Deployments []string
	WriteRequest
}

// DeploymentUpdateResponse answers every deployment write; its JSON is
// api.DeploymentUpdateResponse.
type DeploymentUpdateResponse struct {
	EvalID                string
	EvalCreateIndex       uint64
	DeploymentModifyIndex uint64
	RevertedJobVersion    *uint64
	WriteMeta
}

// AllocUpdateDesiredTransitionRequest sets allocations' desired transitions
// (migrate, reschedule, ...) and creates evals for their jobs in one entry.
type AllocUpdateDesiredTransitionRequest struct {
	Allocs map[string]*DesiredTransition
	Evals  []*Evaluation
	WriteRequest
}
