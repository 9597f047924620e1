package events

import (
	"encoding/json"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// Topics, as Nomad names them.
const (
	TopicJob        = "Job"
	TopicAllocation = "Allocation"
	TopicEvaluation = "Evaluation"
	TopicDeployment = "Deployment"
	TopicNode       = "Node"
	TopicNodePool   = "NodePool"
	TopicACLToken   = "ACLToken"
	TopicACLPolicy  = "ACLPolicy"
	TopicACLRole    = "ACLRole"
	TopicService    = "Service"
	TopicAll        = "*"
)

// Event types, as Nomad names them (nomad-behavior.md §8.9).
const (
	TypeNodeRegistration   = "NodeRegistration"
	TypeNodeDeregistration = "NodeDeregistration"
	TypeNodeEligibility    = "NodeEligibility"
	TypeNodeDrain          = "NodeDrain"
	TypeNodeEvent          = "NodeStreamEvent"
	TypeEvalUpdated        = "EvaluationUpdated"
	TypeAllocUpdated       = "AllocationUpdated"
	TypeJobRegistered      = "JobRegistered"
	TypeJobDeregistered    = "JobDeregistered"
	TypePlanResult         = "PlanResult"

	TypeDeploymentUpdate              = "DeploymentStatusUpdate"
	TypeDeploymentPromotion           = "DeploymentPromotion"
	TypeDeploymentAllocHealth         = "DeploymentAllocHealth"
	TypeAllocationUpdateDesiredStatus = "AllocationUpdateDesiredStatus"

	TypeNodePoolUpserted = "NodePoolUpserted"
	TypeNodePoolDeleted  = "NodePoolDeleted"

	TypeACLTokenUpserted      = "ACLTokenUpserted"
	TypeACLTokenDeleted       = "ACLTokenDeleted"
	TypeACLPolicyUpserted     = "ACLPolicyUpserted"
	TypeACLPolicyDeleted      = "ACLPolicyDeleted"
	TypeACLRoleUpserted       = "ACLRoleUpserted"
	TypeACLRoleDeleted        = "ACLRoleDeleted"
	TypeServiceRegistration   = "ServiceRegistration"
	TypeServiceDeregistration = "ServiceDeregistration"
)

// msgTypeEvents is the event type of the entries that publish events; any
// other entry (job summaries, keys, namespaces, eval, alloc and deployment GC
// deletes) publishes none.
var msgTypeEvents = map[structs.MessageType]string{
	structs.NodeRegisterRequestType:                 TypeNodeRegistration,
	structs.NodeDeregisterRequestType:               TypeNodeDeregistration,
	structs.NodeBatchDeregisterRequestType:          TypeNodeDeregistration,
	structs.NodeUpdateStatusRequestType:             TypeNodeEvent,
	structs.NodeBatchUpdateStatusRequestType:        TypeNodeEvent,
	structs.NodeUpdateEligibilityRequestType:        TypeNodeEligibility,
	structs.NodeUpdateDrainRequestType:              TypeNodeDrain,
	structs.BatchNodeUpdateDrainRequestType:         TypeNodeDrain,
	structs.JobRegisterRequestType:                  TypeJobRegistered,
	structs.JobRegisterBatchRequestType:             TypeJobRegistered,
	structs.JobDeregisterRequestType:                TypeJobDeregistered,
	structs.JobBatchDeregisterRequestType:           TypeJobDeregistered,
	structs.EvalUpdateRequestType:                   TypeEvalUpdated,
	structs.AllocClientUpdateRequestType:            TypeAllocUpdated,
	structs.ApplyPlanResultsRequestType:             TypePlanResult,
	structs.ApplyPlanResultsBatchRequestType:        TypePlanResult,
	structs.DeploymentStatusUpdateRequestType:       TypeDeploymentUpdate,
	structs.DeploymentPromoteRequestType:            TypeDeploymentPromotion,
	structs.DeploymentAllocHealthRequestType:        TypeDeploymentAllocHealth,
	structs.AllocUpdateDesiredTransitionRequestType: TypeAllocationUpdateDesiredStatus,
	// A rolling restart's step changes allocations (restart request or
	// migrate transition) and may create an eval.
	structs.JobRestartRequestType: TypeAllocUpdated,

	structs.NodePoolUpsertRequestType: TypeNodePoolUpserted,
	structs.NodePoolDeleteRequestType: TypeNodePoolDeleted,

	// ACL objects (token secrets are never in a payload).
	structs.ACLTokenUpsertRequestType:                   TypeACLTokenUpserted,
	structs.ACLTokenBootstrapRequestType:                TypeACLTokenUpserted,
	structs.ACLTokenDeleteRequestType:                   TypeACLTokenDeleted,
	structs.ACLTokenExpiredDeleteRequestType:            TypeACLTokenDeleted,
	structs.ACLPolicyUpsertRequestType:                  TypeACLPolicyUpserted,
	structs.ACLPolicyDeleteRequestType:                  TypeACLPolicyDeleted,
	structs.ACLRoleUpsertRequestType:                    TypeACLRoleUpserted,
	structs.ACLRoleDeleteRequestType:                    TypeACLRoleDeleted,
	structs.ServiceRegistrationUpsertRequestType:        TypeServiceRegistration,
	structs.ServiceRegistrationDeleteByIDRequestType:    TypeServiceDeregistration,
	structs.ServiceRegistrationDeleteByAllocRequestType: TypeServiceDeregistration,
}

// tableTopics maps the state tables that carry events to their topic.
var tableTopics = map[string]string{
	"jobs":       TopicJob,
	"allocs":     TopicAllocation,
	"evals":      TopicEvaluation,
	"deployment": TopicDeployment,
	"nodes":      TopicNode,
	"node_pools": TopicNodePool,
	"acl_token":  TopicACLToken,
	"acl_policy": TopicACLPolicy,
	"acl_role":   TopicACLRole,

	"service_registrations": TopicService,
}

// Publishes reports whether entries of msgType publish events.
func Publishes(msgType structs.MessageType) bool {
	_, ok := msgTypeEvents[msgType]
	return ok
}

// Event is one changed object of one entry. Its JSON is Nomad's:
// {Topic, Type, Key, Namespace, FilterKeys, Index, Payload}.
type Event struct {
	Topic      string
	Type       string
	Key        string
	Namespace  string
	FilterKeys []string
	Index      uint64

	obj     any  // the stored object (never mutated)
	deleted bool // the object was removed by this entry

	// json is the event's encoding: a slice of its batch's frame, set
	// once when the batch is first read (batch.encode), never after.
	json []byte
}

// wireEvent is the JSON shape of an Event.
type wireEvent struct {
	Topic      string
	Type       string
	Key        string
	Namespace  string
	FilterKeys []string
	Index      uint64
	Payload    map[string]any
}

// Payload is the event's payload as Nomad sends it: the object under its
// kind's name; a node without its secret, an allocation without its job.
func (e *Event) Payload() map[string]any {
	switch o := e.obj.(type) {
	case *structs.Job:
		p := map[string]any{"Job": o}
		if e.deleted {
			p["Deleted"] = true
		}
		return p
	case *structs.Evaluation:
		return map[string]any{"Evaluation": o}
	case *structs.Allocation:
		a := *o // shallow: only the top-level Job changes
		a.Job = nil
		return map[string]any{"Allocation": &a}
	case *structs.Deployment:
		return map[string]any{"Deployment": o}
	case *structs.Node:
		n := *o
		n.SecretID = ""
		return map[string]any{"Node": &n}
	case *structs.NodePool:
		return map[string]any{"NodePool": o}
	case *structs.ACLToken:
		t := *o
		t.SecretID = ""
		return map[string]any{"ACLToken": &t}
	case *structs.ACLPolicy:
		return map[string]any{"ACLPolicy": o}
	case *structs.ACLRole:
		return map[string]any{"ACLRole": o}
	case *structs.ServiceRegistration:
		return map[string]any{"Service": o}
	}
	return map[string]any{}
}

// JSON is the event encoded as Nomad's JSON: shared with its batch's
// frame once the batch was read, else encoded now.
func (e *Event) JSON() []byte {
	if e.json != nil {
		return e.json
	}
	return e.encode()
}

func (e *Event) encode() []byte {
	b, err := json.Marshal(wireEvent{Topic: e.Topic, Type: e.Type, Key: e.Key, Namespace: e.Namespace,
		FilterKeys: e.FilterKeys, Index: e.Index, Payload: e.Payload()})
	if err != nil {
		// Not expected (the same objects encode for every GET); keep
		// the event's identity so the reader still sees it happen.
		b, _ = json.Marshal(wireEvent{Topic: e.Topic, Type: e.Type, Key: e.Key, Namespace: e.Namespace,
			FilterKeys: e.FilterKeys, Index: e.Index, Payload: map[string]any{"Error": err.Error()}})
	}
	return b
}

// fromChange builds the event of one change, or nil for a table without
// events.
func fromChange(typ string, index uint64, c *memdb.Change) *Event {
	obj := c.After
	if obj == nil {
		obj = c.Before
	}
	e := &Event{Type: typ, Index: index, obj: obj, deleted: c.After == nil}
	switch o := obj.(type) {
	case *structs.Job:
		e.Topic, e.Key, e.Namespace = TopicJob, o.ID, o.Namespace
	case *structs.Evaluation:
		e.Topic, e.Key, e.Namespace = TopicEvaluation, o.ID, o.Namespace
		e.FilterKeys = filterKeys(o.JobID, o.DeploymentID)
	case *structs.Allocation:
		e.Topic, e.Key, e.Namespace = TopicAllocation, o.ID, o.Namespace
		e.FilterKeys = filterKeys(o.JobID, o.DeploymentID)
	case *structs.Deployment:
		e.Topic, e.Key, e.Namespace = TopicDeployment, o.ID, o.Namespace
		e.FilterKeys = filterKeys(o.JobID)
	case *structs.Node:
		// Nodes belong to no namespace: every namespace filter sees them.
		e.Topic, e.Key = TopicNode, o.ID
	case *structs.NodePool:
		// Only the pool entries publish pool events (a pool a node's
		// registration creates is not announced, as in Nomad).
		if typ != TypeNodePoolUpserted && typ != TypeNodePoolDeleted {
			return nil
		}
		e.Topic, e.Key = TopicNodePool, o.Name
	case *structs.ACLToken:
		e.Topic, e.Key = TopicACLToken, o.AccessorID
	case *structs.ACLPolicy:
		e.Topic, e.Key = TopicACLPolicy, o.Name
	case *structs.ACLRole:
		e.Topic, e.Key = TopicACLRole, o.ID
	case *structs.ServiceRegistration:
		// Whatever entry removed it (the client's, an allocation
		// becoming terminal), a removal is a deregistration.
		e.Topic, e.Key, e.Namespace = TopicService, o.ID, o.Namespace
		e.FilterKeys = filterKeys(o.JobID, o.ServiceName)
		e.Type = TypeServiceRegistration
		if e.deleted {
			e.Type = TypeServiceDeregistration
		}
	default:
		return nil
	}
	return e
}

func filterKeys(keys ...string) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if k != "" {
			out = append(out, k)
		}
	}
	return out
}
