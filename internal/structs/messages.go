package structs

import (
	"context"
	"time"
)

// MessageType is the first byte of every Raft log entry. Numbers are stable:
// new types are appended, never renumbered.
type MessageType uint8

const (
	NodeRegisterRequestType          MessageType = 0
	NodeDeregisterRequestType        MessageType = 1
	NodeUpdateStatusRequestType      MessageType = 2
	NodeUpdateDrainRequestType       MessageType = 3
	JobRegisterRequestType           MessageType = 4
	JobDeregisterRequestType         MessageType = 5
	EvalUpdateRequestType            MessageType = 6
	EvalDeleteRequestType            MessageType = 7
	AllocClientUpdateRequestType     MessageType = 9
	ApplyPlanResultsRequestType      MessageType = 13
	NodeUpdateEligibilityRequestType MessageType = 28
	SchedulerConfigRequestType       MessageType = 30
	ClusterMetadataRequestType       MessageType = 32
	RootKeyUpsertRequestType         MessageType = 62
	NamespaceUpsertRequestType       MessageType = 64
	NodeBatchUpdateStatusRequestType MessageType = 65
	// ApplyPlanResultsBatchRequestType carries several committed plans in
	// one entry (ApplyPlanResultsBatchRequest), applied in one transaction.
	ApplyPlanResultsBatchRequestType MessageType = 72

	// Types 100 and up are reserved for entries added by parallel work
	// (kept clear of Nomad's numbers). Periodic launches and dispatches need
	// none: children ride JobRegisterRequestType, and the FSM derives the
	// periodic_launch record from the child's ID.

	// JobRegisterBatchRequestType carries the job registrations that arrived
	// together (JobRegisterBatchRequest): one entry, each applied on its own
	// with its own outcome.
	JobRegisterBatchRequestType MessageType = 110

	// IgnoreUnknownTypeFlag marks an entry a server may skip if it does not
	// know the type (forward compatibility).
	IgnoreUnknownTypeFlag MessageType = 128
)

// QueryOptions are common to every read.
type QueryOptions struct {
	Region        string
	Namespace     string
	MinQueryIndex uint64
	MaxQueryTime  time.Duration
	AllowStale    bool
	Prefix        string
	AuthToken     string
	Filter        string
	PerPage       int32
	NextToken     string
	Reverse       bool

	// ctx is the caller's context (query_context.go); never encoded.
	ctx context.Context
}

// QueryMeta is returned with every read.
type QueryMeta struct {
	Index       uint64
	LastContact time.Duration
	KnownLeader bool
	NextToken   string
}

// WriteRequest is common to every write.
type WriteRequest struct {
	Region           string
	Namespace        string
	AuthToken        string
	IdempotencyToken string
}

// WriteMeta is returned with every write.
type WriteMeta struct {
	Index uint64
}

// NodeRegisterRequest registers or updates a node.
type NodeRegisterRequest struct {
	Node *Node
	WriteRequest
}

// NodeUpdateStatusRequest changes a node's status (heartbeats ride on it).
type NodeUpdateStatusRequest struct {
	NodeID    string
	SecretID  string
	Status    string
	NodeEvent *NodeEvent
	UpdatedAt int64
	// ForceIdentityRenewal asks the server for a new node identity (the
	// client has none, its identity is past half its life, or an operator
	// asked through /v1/client/identity/renew). Cleared before Raft.
	ForceIdentityRenewal bool
	WriteRequest
}

// NodeBatchUpdateStatusRequest changes many nodes' statuses and creates the
// evals that follow from it in one Raft entry: the leader's heartbeat sweeper
// marks every node that went silent in one sweep window down with it. Nodes
// are updated first, so the evals (applied after them) see them down; a node
// that no longer exists is skipped.
type NodeBatchUpdateStatusRequest struct {
	Updates []*NodeUpdateStatusRequest
	Evals   []*Evaluation
	WriteRequest
}

// NodeUpdateEligibilityRequest changes scheduling eligibility.
type NodeUpdateEligibilityRequest struct {
	NodeID      string
	Eligibility string
	NodeEvent   *NodeEvent
	UpdatedAt   int64
	WriteRequest
}

// NodeDeregisterRequest removes nodes.
type NodeDeregisterRequest struct {
	NodeIDs []string
	WriteRequest
}

// NodeUpdateResponse answers register/status calls.
type NodeUpdateResponse struct {
	HeartbeatTTL    time.Duration
	EvalIDs         []string
	EvalCreateIndex uint64
	NodeModifyIndex uint64
	LeaderRPCAddr   string
	NumNodes        int32
	Servers         []*NodeServerInfo
	// SignedIdentity is a newly signed node identity JWT ("" when none was
	// signed this call): the client keeps it in place of the one it had.
	SignedIdentity string
	Index          uint64
}

// NodeServerInfo tells a client about a server.
type NodeServerInfo struct {
	RPCAdvertiseAddr string
	Datacenter       string
}

// JobRegisterRequest is a job write (the Raft entry carries job and eval).
type JobRegisterRequest struct {
	Job               *Job
	Eval              *Evaluation
	EnforceIndex      bool
	JobModifyIndex    uint64
	PreserveCounts    bool
	PreserveResources bool
	PolicyOverride    bool
	EvalPriority      int
	Submission        *JobSubmission
	WriteRequest
}

// JobSubmission is the original source of a job.
type JobSubmission struct {
	Source         string
	Format         string
	VariableFlags  map[string]string
	Variables      string
	Namespace      string
	JobID          string
	Version        uint64
	JobModifyIndex uint64
}

// JobRegisterResponse answers a register.
type JobRegisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Warnings        string
	QueryMeta
}

// JobDeregisterRequest stops (or purges) a job.
type JobDeregisterRequest struct {
	JobID           string
	Purge           bool
	Global          bool
	EvalPriority    int
	NoShutdownDelay bool
	Eval            *Evaluation
	SubmitTime      int64
	WriteRequest
}

// JobDeregisterResponse answers a deregister.
type JobDeregisterResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	QueryMeta
}

// EvalUpdateRequest upserts evaluations.
type EvalUpdateRequest struct {
	Evals     []*Evaluation
	EvalToken string
	WriteRequest
}

// EvalDeleteRequest deletes evaluations and allocations (GC).
type EvalDeleteRequest struct {
	Evals  []string
	Allocs []string
	WriteRequest
}

// AllocUpdateRequest carries client alloc updates (batched) and the evals
// they cause.
type AllocUpdateRequest struct {
	Alloc     []*Allocation
	Evals     []*Evaluation
	UpdatedAt int64
	WriteRequest
}

// AllocStopRequest asks the server to stop an allocation and reschedule it.
type AllocStopRequest struct {
	AllocID         string
	NoShutdownDelay bool
	WriteRequest
}

// AllocStopResponse answers an alloc stop.
type AllocStopResponse struct {
	EvalID string
	Index  uint64
}

// ApplyPlanResultsRequest is the Raft entry a committed plan becomes.
type ApplyPlanResultsRequest struct {
	Job               *Job
	Alloc             []*Allocation // placements and updates (full allocs)
	AllocsStopped     []*Allocation
	AllocsPreempted   []*Allocation
	Deployment        *Deployment
	DeploymentUpdates []*DeploymentStatusUpdate
	EvalID            string
	PreemptionEvals   []*Evaluation
	UpdatedAt         int64
	WriteRequest
}

// JobRegisterBatchRequest is the Raft entry of concurrent job
// registrations (group commit). The FSM applies them in order, each as a
// JobRegisterRequestType entry at this index would be; one failing does not
// stop the others.
type JobRegisterBatchRequest struct {
	Jobs []*JobRegisterRequest
	WriteRequest
}

// ApplyPlanResultsBatchRequest is the Raft entry of several plans the
// applier accepted together. The FSM applies them in order in one state
// transaction: either all of them are written or none is, so no plan in the
// batch can commit without the earlier ones it was verified on top of.
type ApplyPlanResultsBatchRequest struct {
	Plans []*ApplyPlanResultsRequest
	// EvalUpdates are evaluation status updates (workers' completions of
	// earlier evaluations) that ride in the same entry. They are applied
	// before the plans, in their own transaction.
	EvalUpdates []*Evaluation
	WriteRequest
}

// RootKeyUpsertRequest stores a keyring root key through Raft.
type RootKeyUpsertRequest struct {
	Key *RootKey
	WriteRequest
}

// RootKey is a keyring key. Raft, snapshots and the state store carry only
// its metadata: the material (PrivateKey, EncryptionKey) lives in each
// server's keystore, wrapped with that server's key-encryption key. The
// material fields are set in Raft only by entries and snapshots written
// before the keystore existed; applying them moves the material into the
// keystore and stores the metadata alone.
type RootKey struct {
	KeyID      string
	Algorithm  string
	CreateTime int64
	State      string
	PrivateKey []byte // PKCS#8 DER; in Raft only in the old shape
	// EncryptionKey is the AES-256 key variables are encrypted with; keys
	// written before variables existed have none and encrypt nothing.
	// In Raft only in the old shape.
	EncryptionKey []byte
	// PublishTime is when the key's public half may stop being served
	// (0: while the key exists).
	PublishTime int64
	CreateIndex uint64
	ModifyIndex uint64
}

// Root key states, as Nomad's: one active key encrypts and signs; inactive
// keys only decrypt and verify; a deprecated key is being rekeyed away from.
const (
	RootKeyStateActive     = "active"
	RootKeyStateInactive   = "inactive"
	RootKeyStateDeprecated = "deprecated"
)

// ClusterMetadata is written once by the first leader.
type ClusterMetadata struct {
	ClusterID  string
	CreateTime int64
	// ServerSecret is what servers send as AuthToken with the RPCs only
	// servers may make (Eval.Dequeue, Plan.Submit, ...) when tls.rpc does
	// not name them. It is never served over HTTP.
	ServerSecret string
}

// Job version history, stability, scaling events and version tags.
const (
	JobStabilityRequestType         MessageType = 18
	ScalingEventRegisterRequestType MessageType = 38
	JobVersionTagRequestType        MessageType = 61
)
