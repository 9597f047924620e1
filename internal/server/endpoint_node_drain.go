package server

import (
	"time"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/structs"
)

// UpdateDrain sets, updates or cancels a node's drain. The operator's spec
// becomes a strategy with absolute times here, so the Raft entry applies
// the same on every server; the leader's drainer does the moving.
func (n *Node) UpdateDrain(args *structs.NodeUpdateDrainRequest, reply *structs.NodeDrainUpdateResponse) error {
	if done, err := n.srv.forward("Node.UpdateDrain", args.Region, false, args, reply); done {
		return err
	}
	// A client draining itself (drain_on_shutdown) uses its node secret.
	if !n.srv.isSecretOfNode(args.NodeID, args.AuthToken) {
		if err := n.srv.authorize(args.AuthToken, (*acl.ACL).AllowNodeWrite); err != nil {
			return err
		}
	}
	if args.NodeID == "" {
		return structs.NewErrCoded(400, "missing node ID for drain update")
	}
	node, err := n.srv.State().NodeByID(nil, args.NodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return structs.NewErrCoded(404, "node not found")
	}
	now := time.Now()
	req := *args
	req.DrainStrategy = structs.DrainStrategyFor(args.DrainSpec, node.DrainStrategy, now)
	req.DrainSpec = nil
	req.UpdatedAt = now.UnixNano()
	msg := structs.NodeDrainEventSet
	switch {
	case req.DrainStrategy == nil:
		msg = structs.NodeDrainEventDisabled
	case node.DrainStrategy != nil:
		msg = structs.NodeDrainEventUpdated
	}
	if req.DrainStrategy != nil || node.DrainStrategy != nil {
		req.NodeEvent = &structs.NodeEvent{Message: msg, Subsystem: "Drain", Timestamp: now}
	}
	_, idx, err := n.srv.raftApply(structs.NodeUpdateDrainRequestType, &req)
	if err != nil {
		return err
	}
	reply.NodeModifyIndex, reply.Index = idx, idx
	// A node back in service may take the work that waited for it.
	if req.DrainStrategy == nil && args.MarkEligible && node.SchedulingEligibility != structs.NodeSchedulingEligible {
		ids, eidx, err := n.srv.createNodeEvals(node.ID, idx)
		if err != nil {
			return err
		}
		reply.EvalIDs, reply.EvalCreateIndex = ids, eidx
	}
	n.srv.kickDrainer()
	return nil
}

// isSecretOfNode reports whether secret is that node's own secret ID.
func (s *Server) isSecretOfNode(nodeID, secret string) bool {
	if secret == "" || nodeID == "" {
		return false
	}
	n, err := s.State().NodeBySecretID(nil, secret)
	return err == nil && n != nil && n.ID == nodeID
}
