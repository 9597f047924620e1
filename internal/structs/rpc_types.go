package structs

import (
	"time"

	"github.com/hashicorp/nomad/api"
)

// The request/response shapes of the server's RPC endpoints. The HTTP layer
// translates HTTP requests into these and calls "<Endpoint>.<Method>".

// GenericRequest is a read with no specific target.
type GenericRequest struct {
	QueryOptions
}

// GenericResponse is a write with no specific answer.
type GenericResponse struct {
	WriteMeta
}

// JobSpecificRequest targets one job.
type JobSpecificRequest struct {
	JobID string
	All   bool
	QueryOptions
}

// JobListRequest lists jobs.
type JobListRequest struct {
	IncludeMeta bool
	QueryOptions
}

// JobListResponse lists job stubs.
type JobListResponse struct {
	Jobs []*JobListStub
	QueryMeta
}

// SingleJobResponse returns one job (nil when not found).
type SingleJobResponse struct {
	Job *Job
	QueryMeta
}

// JobVersionsRequest lists a job's versions.
type JobVersionsRequest struct {
	JobID string
	Diffs bool
	// DiffVersion / DiffTagName compare every version with that one instead
	// of with its predecessor.
	DiffVersion *uint64
	DiffTagName string
	QueryOptions
}

// JobVersionsResponse lists a job's versions, newest first.
type JobVersionsResponse struct {
	Versions []*Job
	Diffs    []*api.JobDiff
	QueryMeta
}

// JobAllocationsResponse lists a job's allocations.
type JobAllocationsResponse struct {
	Allocations []*AllocListStub
	QueryMeta
}

// JobEvaluationsResponse lists a job's evaluations.
type JobEvaluationsResponse struct {
	Evaluations []*Evaluation
	QueryMeta
}

// JobSummaryResponse returns a job summary.
type JobSummaryResponse struct {
	JobSummary *JobSummary
	QueryMeta
}

// JobPlanRequest is a dry-run register.
type JobPlanRequest struct {
	Job            *Job
	Diff           bool
	PolicyOverride bool
	Explain        bool
	// ExplainAll keeps every ranked node in Explain, not only the top
	// ExplainTopNodes.
	ExplainAll bool
	WriteRequest
}

// JobPlanResponse answers a dry run.
type JobPlanResponse struct {
	Annotations        *PlanAnnotations
	FailedTGAllocs     map[string]*AllocMetric
	JobModifyIndex     uint64
	CreatedEvals       []*Evaluation
	Diff               *api.JobDiff
	NextPeriodicLaunch time.Time
	Warnings           string
	// Explain is set only when the request asked for it (Drover only).
	Explain *PlanExplain `json:",omitempty"`
	WriteMeta
}

// JobValidateRequest validates a job without registering it.
type JobValidateRequest struct {
	Job *Job
	WriteRequest
}

// JobValidateResponse lists validation errors.
type JobValidateResponse struct {
	DriverConfigValidated bool
	ValidationErrors      []string
	Error                 string
	Warnings              string
}

// JobEvaluateRequest forces a new evaluation of a job.
type JobEvaluateRequest struct {
	JobID       string
	EvalOptions EvalOptions
	WriteRequest
}

// EvalOptions tune a forced evaluation.
type EvalOptions struct {
	ForceReschedule bool
}

// DeploymentListResponse lists deployments.
type DeploymentListResponse struct {
	Deployments []*Deployment
	QueryMeta
}

// SingleDeploymentResponse returns one deployment (nil when not found).
type SingleDeploymentResponse struct {
	Deployment *Deployment
	QueryMeta
}

// DeploymentSpecificRequest targets one deployment.
type DeploymentSpecificRequest struct {
	DeploymentID string
	QueryOptions
}

// AllocListRequest lists allocations.
type AllocListRequest struct {
	Resources bool // include AllocatedResources in the stubs
	QueryOptions
}

// AllocListResponse lists allocation stubs.
type AllocListResponse struct {
	Allocations []*AllocListStub
	QueryMeta
}

// AllocSpecificRequest targets one allocation.
type AllocSpecificRequest struct {
	AllocID string
	QueryOptions
}

// SingleAllocResponse returns one allocation (nil when not found).
type SingleAllocResponse struct {
	Alloc *Allocation
	QueryMeta
}

// AllocsGetRequest fetches several allocations (clients pulling work).
type AllocsGetRequest struct {
	AllocIDs []string
	QueryOptions
}

// AllocsGetResponse returns full allocations.
type AllocsGetResponse struct {
	Allocs []*Allocation
	QueryMeta
}

// EvalSpecificRequest targets one evaluation.
type EvalSpecificRequest struct {
	EvalID         string
	IncludeRelated bool
	QueryOptions
}

// SingleEvalResponse returns one evaluation (nil when not found).
type SingleEvalResponse struct {
	Eval *Evaluation
	QueryMeta
}

// EvalListRequest lists evaluations.
type EvalListRequest struct {
	FilterJobID      string
	FilterEvalStatus string
	QueryOptions
}

// EvalListResponse lists evaluations.
type EvalListResponse struct {
	Evaluations []*Evaluation
	QueryMeta
}

// EvalAllocationsResponse lists an evaluation's allocations.
type EvalAllocationsResponse struct {
	Allocations []*AllocListStub
	QueryMeta
}

// EvalDequeueRequest asks the broker for work.
type EvalDequeueRequest struct {
	Schedulers       []string
	Timeout          time.Duration
	SchedulerVersion uint16
	WriteRequest
}

// EvalDequeueResponse hands out an evaluation and its token.
type EvalDequeueResponse struct {
	Eval      *Evaluation
	Token     string
	WaitIndex uint64
	QueryMeta
}

// EvalAckRequest acks or nacks a dequeued evaluation.
type EvalAckRequest struct {
	EvalID string
	Token  string
	WriteRequest
}

// NodeSpecificRequest targets one node.
type NodeSpecificRequest struct {
	NodeID   string
	SecretID string

	// ChangedAllocs asks Node.GetClientAllocs to carry, in full, the
	// allocations changed since MinQueryIndex (AllocModifyIndex above it),
	// so a client need not fetch them with Alloc.GetAllocs.
	ChangedAllocs bool

	QueryOptions
}

// NodeListRequest lists nodes.
type NodeListRequest struct {
	Resources bool
	OS        bool
	QueryOptions
}

// NodeListResponse lists node stubs.
type NodeListResponse struct {
	Nodes []*NodeListStub
	QueryMeta
}

// SingleNodeResponse returns one node (nil when not found).
type SingleNodeResponse struct {
	Node *Node
	QueryMeta
}

// NodeAllocsResponse lists a node's allocations.
type NodeAllocsResponse struct {
	Allocs []*Allocation
	QueryMeta
}

// NodeClientAllocsResponse maps alloc IDs on a node to AllocModifyIndex.
type NodeClientAllocsResponse struct {
	Allocs        map[string]uint64
	MigrateTokens map[string]string

	// Changed are the allocations whose AllocModifyIndex is above the
	// request's MinQueryIndex, when it asked for them (ChangedAllocs),
	// sent as Alloc.GetAllocs sends allocations.
	Changed []*Allocation

	QueryMeta

	// allocsOf are the allocations whose table the server answers with
	// when Allocs is nil (see SetAllocsOf).
	allocsOf []*Allocation
}

// NodeEligibilityUpdateResponse answers an eligibility change.
type NodeEligibilityUpdateResponse struct {
	EvalIDs         []string
	EvalCreateIndex uint64
	NodeModifyIndex uint64
	QueryMeta
}

// PlanRequest submits a plan to the leader's plan queue.
type PlanRequest struct {
	Plan *Plan
	WriteRequest
}

// PlanResponse returns what was committed.
type PlanResponse struct {
	Result *PlanResult
	WriteMeta
}

// KeyringPublicKey is the public half of a signing key.
type KeyringPublicKey struct {
	KeyID      string
	PublicKey  []byte // PKIX DER
	Algorithm  string
	Use        string
	CreateTime int64
}

// KeyringListPublicResponse lists public signing keys.
type KeyringListPublicResponse struct {
	PublicKeys  []*KeyringPublicKey
	PublishTime int64
	QueryMeta
}

// ServerMember is one server in the gossip pool.
type ServerMember struct {
	Name        string
	Addr        string
	Port        uint16
	Tags        map[string]string
	Status      string
	ProtocolMin uint8
	ProtocolMax uint8
	ProtocolCur uint8
	DelegateMin uint8
	DelegateMax uint8
	DelegateCur uint8
}

// ServerMembersResponse lists servers.
type ServerMembersResponse struct {
	ServerName   string
	ServerRegion string
	ServerDC     string
	Members      []*ServerMember
}

// NamespaceListResponse lists namespaces.
type NamespaceListResponse struct {
	Namespaces []*Namespace
	QueryMeta
}

// NamespaceSpecificRequest targets one namespace.
type NamespaceSpecificRequest struct {
	Name string
	QueryOptions
}

// SingleNamespaceResponse returns one namespace.
type SingleNamespaceResponse struct {
	Namespace *Namespace
	QueryMeta
}

// JobScaleStatusResponse is a job's per-group scaling status.
type JobScaleStatusResponse struct {
	JobScaleStatus *api.JobScaleStatusResponse
	QueryMeta
}

// JobSubmissionRequest asks for the source of one job version.
type JobSubmissionRequest struct {
	JobID   string
	Version uint64
	QueryOptions
}

// JobSubmissionResponse returns a job version's source.
type JobSubmissionResponse struct {
	Submission *JobSubmission
	QueryMeta
}
