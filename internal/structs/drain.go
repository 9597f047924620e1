package structs

import (
	"time"

	"github.com/hashicorp/nomad/api"
)

// BatchNodeUpdateDrainRequestType carries BatchNodeUpdateDrainRequest: the
// drainer's completions (Nomad's number).
const BatchNodeUpdateDrainRequestType MessageType = 29

// DrainSpec is what an operator asks of a drain (the wire type).
type DrainSpec = api.DrainSpec

// Node events a drain writes.
const (
	NodeDrainEventSet      = "Node drain strategy set"
	NodeDrainEventUpdated  = "Node drain strategy updated"
	NodeDrainEventDisabled = "Node drain disabled"
	NodeDrainEventComplete = "Node drain complete"
	NodeDrainEventDeadline = "Node drain deadline reached: remaining allocations stopped"
)

// DrainStatus is Node.LastDrain.Status.
type DrainStatus = api.DrainStatus

// Drain metadata statuses (Node.LastDrain.Status).
const (
	DrainStatusDraining = api.DrainStatusDraining
	DrainStatusComplete = api.DrainStatusComplete
	DrainStatusCanceled = api.DrainStatusCanceled
)

// NodeUpdateDrainRequest sets (DrainStrategy non-nil) or cancels a node's
// drain. It is also the Raft entry (NodeUpdateDrainRequestType): the
// endpoint turns the operator's DrainSpec into a DrainStrategy with
// absolute times before proposing it, so every server applies the same.
type NodeUpdateDrainRequest struct {
	NodeID        string
	DrainSpec     *DrainSpec     `json:",omitempty"` // from the HTTP API
	DrainStrategy *DrainStrategy `json:",omitempty"` // what is stored
	// MarkEligible makes the node eligible again when the drain is
	// cancelled.
	MarkEligible bool
	Meta         map[string]string
	NodeEvent    *NodeEvent
	UpdatedAt    int64 // unix nanoseconds
	WriteRequest
}

// NodeDrainUpdateResponse answers a drain change (api.NodeDrainUpdateResponse).
type NodeDrainUpdateResponse struct {
	NodeModifyIndex uint64
	EvalIDs         []string
	EvalCreateIndex uint64
	WriteMeta
}

// DrainUpdate is one node's change in a BatchNodeUpdateDrainRequest.
type DrainUpdate struct {
	DrainStrategy *DrainStrategy
	MarkEligible  bool
}

// BatchNodeUpdateDrainRequest changes several nodes' drains in one entry:
// the drainer clears the strategy of every node whose drain completed.
type BatchNodeUpdateDrainRequest struct {
	Updates    map[string]*DrainUpdate
	NodeEvents map[string]*NodeEvent
	UpdatedAt  int64 // unix nanoseconds
	WriteRequest
}

// DrainStrategyFor turns an operator's spec into the stored strategy at
// now: a negative deadline forces the drain at once, zero never forces it,
// a positive one forces it at now+deadline. An update of a running drain
// keeps its start time.
func DrainStrategyFor(spec *DrainSpec, existing *DrainStrategy, now time.Time) *DrainStrategy {
	if spec == nil {
		return nil
	}
	d := &DrainStrategy{DrainSpec: *spec, StartedAt: now.UTC()}
	if existing != nil && !existing.StartedAt.IsZero() {
		d.StartedAt = existing.StartedAt
	}
	switch {
	case spec.Deadline < 0:
		d.ForceDeadline = now.UTC()
	case spec.Deadline > 0:
		d.ForceDeadline = now.UTC().Add(spec.Deadline)
	}
	return d
}

// DrainDeadlinePassed reports whether the drain must now stop whatever is
// left on the node.
func DrainDeadlinePassed(d *DrainStrategy, now time.Time) bool {
	return d != nil && !d.ForceDeadline.IsZero() && !now.Before(d.ForceDeadline)
}
