package server

import (
	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/structs"
)

// Deregister removes nodes from the cluster (the HTTP API's node purge). Each
// node's heartbeat deadline is dropped, and every job with live allocations
// on a removed node gets an evaluation, which finds those allocations on a
// node that no longer exists, marks them lost and places replacements. A
// client still running on a purged node is told at its next heartbeat or
// pull that its node is unknown and registers again, empty.
func (n *Node) Deregister(args *structs.NodeDeregisterRequest, reply *structs.NodeUpdateResponse) error {
	if done, err := n.srv.forward("Node.Deregister", args.Region, false, args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, (*acl.ACL).AllowNodeWrite); err != nil {
		return err
	}
	if len(args.NodeIDs) == 0 {
		return structs.NewErrCoded(400, "missing node IDs for deregistration")
	}
	st := n.srv.State()
	for _, id := range args.NodeIDs {
		node, err := st.NodeByID(nil, id)
		if err != nil {
			return err
		}
		if node == nil {
			return structs.NewErrCoded(404, "node %q not found", id)
		}
	}
	_, idx, err := n.srv.raftApply(structs.NodeDeregisterRequestType, args)
	if err != nil {
		return err
	}
	for _, id := range args.NodeIDs {
		n.srv.heartbeats.Clear(id)
	}
	reply.NodeModifyIndex, reply.Index = idx, idx
	evals, err := n.srv.nodeUpdateEvals(args.NodeIDs, idx)
	if err != nil || len(evals) == 0 {
		return err
	}
	_, eidx, err := n.srv.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals})
	if err != nil {
		return err
	}
	for _, e := range evals {
		reply.EvalIDs = append(reply.EvalIDs, e.ID)
	}
	reply.EvalCreateIndex, reply.Index = eidx, eidx
	return nil
}
