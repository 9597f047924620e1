package server

import (
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// maxNodesPerDownEntry bounds one Raft entry of the heartbeat sweeper (a
// whole rack or zone going silent at once is split into a few entries).
const maxNodesPerDownEntry = 2000

// heartbeatsExpired marks every node of one sweep window down: one Raft
// entry carrying all their status changes and one node-update eval per
// affected job across all of them (not one per job per node, as marking
// them one at a time would). Runs on the heartbeat sweeper's goroutine; the
// next sweep waits for it, so expiries arriving meanwhile form the next
// batch.
func (s *Server) heartbeatsExpired(nodeIDs []string) {
	for len(nodeIDs) > 0 {
		n := min(len(nodeIDs), maxNodesPerDownEntry)
		if err := s.markNodesDown(nodeIDs[:n]); err != nil {
			s.logger.Error("marking silent nodes down failed", "nodes", n, "error", err)
		}
		nodeIDs = nodeIDs[n:]
	}
}

func (s *Server) markNodesDown(nodeIDs []string) error {
	if !s.IsLeader() {
		return nil
	}
	st := s.State()
	now := time.Now()
	req := &structs.NodeBatchUpdateStatusRequest{}
	var down []string
	for _, id := range nodeIDs {
		if s.heartbeats.Armed(id) {
			continue // it heartbeated after the sweep expired it
		}
		node, err := st.NodeByID(nil, id)
		if err != nil {
			return err
		}
		if node == nil || node.Status == structs.NodeStatusDown || node.Status == structs.NodeStatusDisconnected {
			continue
		}
		status, err := s.missedHeartbeatStatus(node, now)
		if err != nil {
			return err
		}
		req.Updates = append(req.Updates, &structs.NodeUpdateStatusRequest{NodeID: id, Status: status,
			NodeEvent: &structs.NodeEvent{Message: "Node heartbeat missed", Subsystem: "Cluster", Timestamp: now},
			UpdatedAt: now.Unix()})
		down = append(down, id)
	}
	if len(down) == 0 {
		return nil
	}
	s.logger.Warn("node TTLs expired, marking nodes down (or disconnected where their allocations tolerate it)", "nodes", len(down), "first_node_id", down[0])
	// The evals are built from the allocs now and applied right after the
	// status changes in the same entry, so the schedulers see the nodes down.
	evals, err := s.nodeUpdateEvals(down, 0)
	if err != nil {
		return err
	}
	req.Evals = evals
	if _, _, err = s.raftApply(structs.NodeBatchUpdateStatusRequestType, req); err != nil {
		return err
	}
	// A plan committed between building the evals and the entry may have
	// placed a job's first alloc on one of these nodes (after the entry the
	// plan applier refuses them). Such jobs get their eval now; usually
	// there are none and the batch stays one entry.
	after, err := s.nodeUpdateEvals(down, 0)
	if err != nil {
		return err
	}
	covered := make(map[structs.NamespacedID]bool, len(evals))
	for _, e := range evals {
		covered[structs.NamespacedID{Namespace: e.Namespace, ID: e.JobID}] = true
	}
	var missed []*structs.Evaluation
	for _, e := range after {
		if !covered[structs.NamespacedID{Namespace: e.Namespace, ID: e.JobID}] {
			missed = append(missed, e)
		}
	}
	if len(missed) > 0 {
		_, _, err = s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: missed})
	}
	return err
}

// nodeUpdateEvals builds one pending node-update eval per job that has a
// live alloc on any of nodeIDs. NodeID is set when the eval concerns one
// node (the scheduler reconciles the whole job either way).
func (s *Server) nodeUpdateEvals(nodeIDs []string, nodeIndex uint64) ([]*structs.Evaluation, error) {
	st := s.State()
	now := time.Now().UnixNano()
	byJob := map[structs.NamespacedID]*structs.Evaluation{}
	var evals []*structs.Evaluation
	for _, nodeID := range nodeIDs {
		allocs, err := st.AllocsByNode(nil, nodeID)
		if err != nil {
			return nil, err
		}
		for _, a := range allocs {
			if a.Job == nil {
				continue
			}
			if a.ServerTerminalStatus() && a.ClientTerminalStatus() {
				continue
			}
			if a.Job.Type == structs.JobTypeBatch && a.TerminalStatus() {
				continue
			}
			key := structs.NamespacedID{Namespace: a.Namespace, ID: a.JobID}
			if e, ok := byJob[key]; ok {
				if e.NodeID != nodeID {
					e.NodeID = ""
				}
				continue
			}
			e := &structs.Evaluation{ID: newID(), Namespace: a.Namespace, Priority: a.Job.Priority, Type: a.Job.Type,
				TriggeredBy: structs.EvalTriggerNodeUpdate, JobID: a.JobID, JobModifyIndex: a.Job.JobModifyIndex,
				NodeID: nodeID, NodeModifyIndex: nodeIndex, Status: structs.EvalStatusPending, CreateTime: now, ModifyTime: now}
			byJob[key] = e
			evals = append(evals, e)
		}
	}
	return evals, nil
}

// missedHeartbeatStatus is what a node that missed its heartbeats becomes:
// disconnected when it runs an allocation whose group tolerates a
// disconnected client (disconnect.lost_after, or the older
// max_client_disconnect) and has not yet been unknown for longer than
// that; down otherwise, and always for a node that was still initializing.
// The disconnected node's allocations then turn unknown (replaced at once
// when disconnect.replace) instead of lost.
func (s *Server) missedHeartbeatStatus(node *structs.Node, now time.Time) (string, error) {
	if node.Status == structs.NodeStatusInit {
		return structs.NodeStatusDown, nil
	}
	allocs, err := s.State().AllocsByNode(nil, node.ID)
	if err != nil {
		return "", err
	}
	for _, a := range allocs {
		if a.Job == nil || a.DesiredStatus != structs.AllocDesiredStatusRun || a.ClientTerminalStatus() {
			continue
		}
		tg := a.Job.LookupTaskGroup(a.TaskGroup)
		if tg == nil {
			continue
		}
		window := groupLostAfter(tg)
		if window <= 0 {
			continue
		}
		if a.ClientStatus == structs.AllocClientStatusUnknown && !unknownSince(a).Add(window).After(now) {
			continue // already past its window
		}
		return structs.NodeStatusDisconnected, nil
	}
	return structs.NodeStatusDown, nil
}

// groupLostAfter is how long a group tolerates a disconnected client.
func groupLostAfter(tg *structs.TaskGroup) time.Duration {
	if tg.Disconnect != nil && tg.Disconnect.LostAfter != nil {
		return *tg.Disconnect.LostAfter
	}
	if tg.MaxClientDisconnect != nil {
		return *tg.MaxClientDisconnect
	}
	return 0
}

// unknownSince is when a was last marked unknown (zero if never).
func unknownSince(a *structs.Allocation) time.Time {
	for i := len(a.AllocStates) - 1; i >= 0; i-- {
		if st := a.AllocStates[i]; st != nil && st.Field == "ClientStatus" {
			if st.Value == structs.AllocClientStatusUnknown {
				return st.Time
			}
			break
		}
	}
	return time.Time{}
}
