package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// maxNodeEvents is how many events a node keeps (newest last).
const maxNodeEvents = 10

// NodeByID returns a node, or nil.
func (s *reader) NodeByID(ws memdb.WatchSet, id string) (*structs.Node, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableNodes, "id", id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.Node), nil
}

// NodeReader returns a function that looks nodes up by ID, all in one
// read transaction opened now, for a caller that looks up many at once:
// the FSM finds the stored node of each node ID a plan's placements
// carry, to share its ID and name strings. It returns nil for an unknown
// node, is not safe for concurrent use and registers no watches.
func (s *reader) NodeReader() func(id string) *structs.Node {
	txn := s.db.Txn(false)
	return func(id string) *structs.Node {
		raw, err := txn.First(tableNodes, "id", id)
		if err != nil || raw == nil {
			return nil
		}
		return raw.(*structs.Node)
	}
}

// NodeBySecretID returns the node holding secretID, or nil.
func (s *reader) NodeBySecretID(ws memdb.WatchSet, secretID string) (*structs.Node, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableNodes, "secret_id", secretID)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.Node), nil
}

// Nodes iterates every node.
func (s *reader) Nodes(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableNodes, "id")
}

// NodesByIDPrefix iterates nodes whose ID starts with prefix.
func (s *reader) NodesByIDPrefix(ws memdb.WatchSet, prefix string) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableNodes, "id_prefix", prefix)
}

// UpsertNode registers a node or updates its fingerprint. A new node starts
// "initializing" (unless it says otherwise), eligible, in the default pool.
// Re-registering keeps what the servers own: status, eligibility, drain,
// events and the heartbeat/alloc-update indexes. ComputedClass is derived.
func (s *StateStore) UpsertNode(index uint64, in *structs.Node) error {
	if in == nil || in.ID == "" {
		return fmt.Errorf("state: upsert node: missing node or node ID")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()
	n := *in
	ex, err := nodeLookup(txn, n.ID)
	if err != nil {
		return err
	}
	if n.NodePool == "" {
		n.NodePool = structs.DefaultNodePool
	}
	if ex != nil {
		n.CreateIndex = ex.CreateIndex
		n.Status = ex.Status
		n.StatusDescription = ex.StatusDescription
		n.StatusUpdatedAt = ex.StatusUpdatedAt
		n.SchedulingEligibility = ex.SchedulingEligibility
		n.DrainStrategy = ex.DrainStrategy
		n.LastDrain = ex.LastDrain
		n.Events = ex.Events
		n.LastMissedHeartbeatIndex = ex.LastMissedHeartbeatIndex
		n.LastAllocUpdateIndex = ex.LastAllocUpdateIndex
	} else {
		n.CreateIndex = index
		if n.Status == "" {
			n.Status = structs.NodeStatusInit
		}
		if n.SchedulingEligibility == "" {
			n.SchedulingEligibility = structs.NodeSchedulingEligible
		}
		if len(n.Events) > 0 {
			n.Events = stampEvents(n.Events, index)
		}
		// A new node with no live allocations has nothing to push: its
		// first client update then need not rewrite it (see
		// UpdateAllocsFromClient). One that inherits live allocations
		// (re-registered after a purge) must still push them first.
		live, err := txn.Get(tableAllocs, "node_terminal", n.ID, false)
		if err != nil {
			return fmt.Errorf("state: alloc lookup: %w", err)
		}
		if live.Next() == nil {
			n.LastAllocUpdateIndex = index
		}
	}
	n.ModifyIndex = index
	n.ComputeClass()
	n.Drain = n.DrainStrategy != nil
	if err := txn.Insert(tableNodes, &n); err != nil {
		return fmt.Errorf("state: node insert: %w", err)
	}
	if err := bumpIndex(txn, index, tableNodes); err != nil {
		return err
	}
	// A node of a pool nobody created creates it, as Nomad's servers do.
	if err := ensureNodePool(txn, index, n.NodePool); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

func stampEvents(in []*structs.NodeEvent, index uint64) []*structs.NodeEvent {
	out := make([]*structs.NodeEvent, 0, len(in))
	for _, e := range in {
		if e == nil {
			continue
		}
		c := *e
		if c.CreateIndex == 0 {
			c.CreateIndex = index
		}
		out = append(out, &c)
	}
	if len(out) > maxNodeEvents {
		out = out[len(out)-maxNodeEvents:]
	}
	return out
}

func nodeLookup(txn *memdb.Txn, id string) (*structs.Node, error) {
	raw, err := txn.First(tableNodes, "id", id)
	if err != nil {
		return nil, fmt.Errorf("state: node lookup: %w", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.Node), nil
}

// appendEvent returns events plus e (stamped with index), keeping the last
// maxNodeEvents.
func appendEvent(events []*structs.NodeEvent, e *structs.NodeEvent, index uint64) []*structs.NodeEvent {
	out := make([]*structs.NodeEvent, 0, len(events)+1)
	out = append(out, events...)
	c := *e
	c.CreateIndex = index
	out = append(out, &c)
	if len(out) > maxNodeEvents {
		out = out[len(out)-maxNodeEvents:]
	}
	return out
}

// UpdateNodeStatus changes a node's status. A node going down or
// disconnected from ready/initializing records LastMissedHeartbeatIndex; a
// node becoming ready clears it.
func (s *StateStore) UpdateNodeStatus(index uint64, nodeID, status string, updatedAt int64, event *structs.NodeEvent) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	ex, err := nodeLookup(txn, nodeID)
	if err != nil {
		return err
	}
	if ex == nil {
		return fmt.Errorf("node %q not found", nodeID)
	}
	n := *ex
	switch status {
	case structs.NodeStatusDown, structs.NodeStatusDisconnected:
		if ex.Status == structs.NodeStatusReady || ex.Status == structs.NodeStatusInit {
			n.LastMissedHeartbeatIndex = index
		}
	case structs.NodeStatusReady:
		n.LastMissedHeartbeatIndex = 0
	}
	n.Status = status
	n.StatusUpdatedAt = updatedAt
	if event != nil {
		n.Events = appendEvent(ex.Events, event, index)
	}
	n.ModifyIndex = index
	if err := txn.Insert(tableNodes, &n); err != nil {
		return fmt.Errorf("state: node insert: %w", err)
	}
	if err := bumpIndex(txn, index, tableNodes); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// UpdateNodeEligibility changes a node's scheduling eligibility. A draining
// node cannot be made eligible.
func (s *StateStore) UpdateNodeEligibility(index uint64, nodeID, eligibility string, updatedAt int64, event *structs.NodeEvent) error {
	if eligibility != structs.NodeSchedulingEligible && eligibility != structs.NodeSchedulingIneligible {
		return fmt.Errorf("invalid scheduling eligibility %q", eligibility)
	}
	txn := s.db.Txn(true)
	defer txn.Abort()
	ex, err := nodeLookup(txn, nodeID)
	if err != nil {
		return err
	}
	if ex == nil {
		return fmt.Errorf("node %q not found", nodeID)
	}
	if ex.DrainStrategy != nil && eligibility == structs.NodeSchedulingEligible {
		return fmt.Errorf("cannot set node %q eligible while it is draining", nodeID)
	}
	n := *ex
	n.SchedulingEligibility = eligibility
	n.StatusUpdatedAt = updatedAt
	if event != nil {
		n.Events = appendEvent(ex.Events, event, index)
	}
	n.ModifyIndex = index
	if err := txn.Insert(tableNodes, &n); err != nil {
		return fmt.Errorf("state: node insert: %w", err)
	}
	if err := bumpIndex(txn, index, tableNodes); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// DeleteNode removes nodes. Every ID must exist (nothing is deleted
// otherwise).
func (s *StateStore) DeleteNode(index uint64, nodeIDs []string) error {
	if len(nodeIDs) == 0 {
		return fmt.Errorf("state: delete node: no node IDs")
	}
	txn := s.db.Txn(true)
	defer txn.Abort()
	for _, id := range nodeIDs {
		ex, err := nodeLookup(txn, id)
		if err != nil {
			return err
		}
		if ex == nil {
			return fmt.Errorf("node %q not found", id)
		}
		if err := txn.Delete(tableNodes, ex); err != nil {
			return fmt.Errorf("state: node delete: %w", err)
		}
	}
	if err := bumpIndex(txn, index, tableNodes); err != nil {
		return err
	}
	txn.Commit()
	return nil
}
