package state

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// UpdateNodeDrain sets or cancels one node's drain (an operator's request).
// A drain makes the node ineligible; cancelling leaves it ineligible unless
// markEligible. LastDrain records the drain's start, last change, status and
// the operator's meta.
func (s *StateStore) UpdateNodeDrain(index uint64, req *structs.NodeUpdateDrainRequest) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	u := &structs.DrainUpdate{DrainStrategy: req.DrainStrategy, MarkEligible: req.MarkEligible}
	if err := updateNodeDrainTxn(txn, index, req.NodeID, u, req.NodeEvent, req.Meta, req.UpdatedAt, structs.DrainStatusCanceled); err != nil {
		return err
	}
	if err := bumpIndex(txn, index, tableNodes); err != nil {
		return err
	}
	txn.Commit()
	return nil
}

// UpdateNodeDrainBatch applies the drainer's changes: a nil strategy marks
// the drain complete. Unknown nodes are skipped (purged meanwhile).
func (s *StateStore) UpdateNodeDrainBatch(index uint64, req *structs.BatchNodeUpdateDrainRequest) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	changed := false
	for id, u := range req.Updates {
		if u == nil {
			continue
		}
		n, err := nodeLookup(txn, id)
		if err != nil {
			return err
		}
		if n == nil {
			continue
		}
		if err := updateNodeDrainTxn(txn, index, id, u, req.NodeEvents[id], nil, req.UpdatedAt, structs.DrainStatusComplete); err != nil {
			return err
		}
		changed = true
	}
	if changed {
		if err := bumpIndex(txn, index, tableNodes); err != nil {
			return err
		}
	}
	txn.Commit()
	return nil
}

// updateNodeDrainTxn changes one node's drain; endStatus is the LastDrain
// status a removed strategy leaves (canceled by an operator, complete by
// the drainer). meta nil keeps the drain's recorded meta.
func updateNodeDrainTxn(txn *memdb.Txn, index uint64, nodeID string, u *structs.DrainUpdate, event *structs.NodeEvent,
	meta map[string]string, updatedAt int64, endStatus structs.DrainStatus) error {
	ex, err := nodeLookup(txn, nodeID)
	if err != nil {
		return err
	}
	if ex == nil {
		return fmt.Errorf("node %q not found", nodeID)
	}
	n := *ex
	at := time.Unix(0, updatedAt).UTC()
	switch {
	case u.DrainStrategy != nil:
		d := *u.DrainStrategy
		n.DrainStrategy = &d
		n.SchedulingEligibility = structs.NodeSchedulingIneligible
		ld := &structs.DrainMetadata{StartedAt: d.StartedAt, UpdatedAt: at, Status: structs.DrainStatusDraining, Meta: meta}
		if ex.DrainStrategy != nil && ex.LastDrain != nil {
			ld.AccessorID = ex.LastDrain.AccessorID
			if meta == nil {
				ld.Meta = ex.LastDrain.Meta
			}
		}
		n.LastDrain = ld
	case ex.DrainStrategy != nil:
		n.DrainStrategy = nil
		if ex.LastDrain != nil {
			ld := *ex.LastDrain
			ld.Status, ld.UpdatedAt = endStatus, at
			n.LastDrain = &ld
		}
		if u.MarkEligible {
			n.SchedulingEligibility = structs.NodeSchedulingEligible
		}
	default:
		// No drain to cancel: only eligibility may change.
		if u.MarkEligible {
			n.SchedulingEligibility = structs.NodeSchedulingEligible
		}
	}
	if event != nil {
		n.Events = appendEvent(ex.Events, event, index)
	}
	n.Drain = n.DrainStrategy != nil
	n.StatusUpdatedAt = at.Unix()
	n.ModifyIndex = index
	if err := txn.Insert(tableNodes, &n); err != nil {
		return fmt.Errorf("state: node insert: %w", err)
	}
	return nil
}

// DrainingNodes returns the nodes with a drain strategy.
func (s *reader) DrainingNodes(ws memdb.WatchSet) ([]*structs.Node, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	iter, err := get(txn, ws, tableNodes, "draining", true)
	if err != nil {
		return nil, err
	}
	var out []*structs.Node
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.Node))
	}
	return out, nil
}
