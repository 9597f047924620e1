package server

import (
	"sort"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/scheduler/feasible"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Node is the RPC endpoint for client nodes.
type Node struct{ srv *Server }

// Register creates or updates a node. It never changes an existing node's
// status: only heartbeats (UpdateStatus) do, which is what keeps a
// reconnecting node from becoming ready before its allocs are synced.
func (n *Node) Register(args *structs.NodeRegisterRequest, reply *structs.NodeUpdateResponse) error {
	if done, err := n.srv.forward("Node.Register", args.Region, false, args, reply); done {
		return err
	}
	node := args.Node
	switch {
	case node == nil:
		return structs.NewErrCoded(400, "missing node for client registration")
	case node.ID == "":
		return structs.NewErrCoded(400, "missing node ID for client registration")
	case node.Datacenter == "":
		return structs.NewErrCoded(400, "missing datacenter for client registration")
	case node.Name == "":
		return structs.NewErrCoded(400, "missing node name for client registration")
	case len(node.Attributes) == 0:
		return structs.NewErrCoded(400, "missing attributes for client registration")
	case node.SecretID == "":
		return structs.NewErrCoded(400, "missing node secret ID for client registration")
	case node.NodePool == structs.AllNodePool:
		return structs.NewErrCoded(400, "node is not allowed to register in node pool %q", structs.AllNodePool)
	case node.NodePool != "" && !structs.ValidNodePoolName(node.NodePool):
		return structs.NewErrCoded(400, "invalid node pool %q: a node pool name has 1 to 128 letters, digits, '-' or '_'", node.NodePool)
	}
	st := n.srv.State()
	existing, err := st.NodeByID(nil, node.ID)
	if err != nil {
		return err
	}
	node = node.Copy()
	if existing != nil {
		if existing.SecretID != node.SecretID {
			return structs.NewErrCoded(400, "node secret ID does not match. Not registering node.")
		}
		node.Status = existing.Status
	} else {
		if node.Status == "" || node.Status == structs.NodeStatusReady {
			node.Status = structs.NodeStatusInit
		}
		node.Events = append(node.Events, &structs.NodeEvent{Message: "Node registered", Subsystem: "Cluster", Timestamp: time.Now()})
	}
	if node.SchedulingEligibility == "" {
		node.SchedulingEligibility = structs.NodeSchedulingEligible
	}
	if node.NodePool == "" {
		node.NodePool = structs.DefaultNodePool
	}
	node.StatusUpdatedAt = time.Now().Unix()
	node.ComputeClass()

	_, idx, err := n.srv.raftApply(structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node, WriteRequest: args.WriteRequest})
	if err != nil {
		return err
	}
	reply.NodeModifyIndex, reply.Index = idx, idx
	if existing != nil && existing.Status == structs.NodeStatusReady && schedulingChanged(existing, node) {
		ids, eidx, err := n.srv.createNodeEvals(node.ID, idx)
		if err != nil {
			return err
		}
		reply.EvalIDs, reply.EvalCreateIndex = ids, eidx
	}
	n.fillHeartbeat(node.ID, node.Status, reply)
	n.srv.attachNodeIdentity(node, reply)
	return nil
}

func schedulingChanged(a, b *structs.Node) bool {
	return a.Datacenter != b.Datacenter || a.Name != b.Name || a.NodeClass != b.NodeClass ||
		a.NodePool != b.NodePool || a.ComputedClass != b.ComputedClass
}

func (n *Node) fillHeartbeat(nodeID, status string, reply *structs.NodeUpdateResponse) {
	if status != structs.NodeStatusDown && n.srv.IsLeader() {
		reply.HeartbeatTTL = n.srv.heartbeats.Reset(nodeID)
	}
	reply.LeaderRPCAddr = n.srv.LeaderAddr()
	reply.Servers = n.srv.serverInfo()
	reply.NumNodes = int32(n.srv.heartbeats.Count())
}

// UpdateStatus is the heartbeat and the node status state machine.
func (n *Node) UpdateStatus(args *structs.NodeUpdateStatusRequest, reply *structs.NodeUpdateResponse) error {
	if done, err := n.srv.forward("Node.UpdateStatus", args.Region, false, args, reply); done {
		return err
	}
	switch args.Status {
	case structs.NodeStatusInit, structs.NodeStatusReady, structs.NodeStatusDown, structs.NodeStatusDisconnected:
	default:
		return structs.NewErrCoded(400, "invalid status for node: %q", args.Status)
	}
	st := n.srv.State()
	node, err := st.NodeByID(nil, args.NodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return structs.NewErrCoded(404, "node not found")
	}
	if args.SecretID != "" && args.SecretID != node.SecretID {
		return structs.NewErrCoded(403, "node secret ID does not match")
	}
	if args.SecretID == "" {
		// Only the node itself (its secret) or a node:write token.
		if err := n.srv.authorize(args.AuthToken, (*acl.ACL).AllowNodeWrite); err != nil {
			return err
		}
	}
	newStatus := args.Status
	if args.Status == structs.NodeStatusReady {
		switch node.Status {
		case structs.NodeStatusDisconnected:
			// Never straight back to ready: the client must push its allocs first.
			newStatus = structs.NodeStatusInit
		case structs.NodeStatusInit:
			if node.LastAllocUpdateIndex <= node.LastMissedHeartbeatIndex {
				waiting, err := awaitingClientPush(st, node.ID)
				if err != nil {
					return err
				}
				if waiting {
					newStatus = structs.NodeStatusInit
				}
			}
		}
	}
	event := args.NodeEvent
	if event == nil && node.Status == structs.NodeStatusDown && newStatus != structs.NodeStatusDown {
		event = &structs.NodeEvent{Message: "Node reregistered by heartbeat", Subsystem: "Cluster", Timestamp: time.Now()}
	}
	if newStatus != node.Status || event != nil {
		req := &structs.NodeUpdateStatusRequest{NodeID: node.ID, Status: newStatus, NodeEvent: event,
			UpdatedAt: time.Now().Unix(), WriteRequest: args.WriteRequest}
		_, idx, err := n.srv.raftApply(structs.NodeUpdateStatusRequestType, req)
		if err != nil {
			return err
		}
		reply.NodeModifyIndex, reply.Index = idx, idx
		if needsNodeEvals(node.Status, newStatus) {
			ids, eidx, err := n.srv.createNodeEvals(node.ID, idx)
			if err != nil {
				return err
			}
			reply.EvalIDs, reply.EvalCreateIndex = ids, eidx
		}
	} else {
		reply.Index = node.ModifyIndex
	}
	if newStatus == structs.NodeStatusDown {
		n.srv.heartbeats.Clear(node.ID)
	}
	n.fillHeartbeat(node.ID, newStatus, reply)
	if args.ForceIdentityRenewal && newStatus != structs.NodeStatusDown {
		n.srv.attachNodeIdentity(node, reply)
	}
	return nil
}

// awaitingClientPush reports whether the node has a live allocation the
// servers hold as unknown: its client has not told them what it is doing
// since it was marked missing, and a scheduler pass on the node would
// decide from that stale state (seed 001). A node whose allocations were
// never marked unknown (it came back before any pass acted on its absence)
// has nothing stale to wait for: holding it would keep it initializing
// until some allocation happened to change, as its client only pushes
// changes.
func awaitingClientPush(st *state.StateStore, nodeID string) (bool, error) {
	live, err := st.AllocsByNodeTerminal(nil, nodeID, false)
	if err != nil {
		return false, err
	}
	for _, a := range live {
		if a.ClientStatus == structs.AllocClientStatusUnknown {
			return true, nil
		}
	}
	return false, nil
}

func needsNodeEvals(from, to string) bool {
	if from == to {
		return false
	}
	switch {
	case to == structs.NodeStatusDown, to == structs.NodeStatusDisconnected:
		return true
	case to == structs.NodeStatusReady:
		return true
	case from == structs.NodeStatusDisconnected:
		return true
	}
	return false
}

// UpdateEligibility toggles scheduling eligibility.
func (n *Node) UpdateEligibility(args *structs.NodeUpdateEligibilityRequest, reply *structs.NodeEligibilityUpdateResponse) error {
	if done, err := n.srv.forward("Node.UpdateEligibility", args.Region, false, args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, (*acl.ACL).AllowNodeWrite); err != nil {
		return err
	}
	switch args.Eligibility {
	case structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible:
	default:
		return structs.NewErrCoded(400, "invalid scheduling eligibility %q", args.Eligibility)
	}
	node, err := n.srv.State().NodeByID(nil, args.NodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return structs.NewErrCoded(404, "node not found")
	}
	if node.DrainStrategy != nil && args.Eligibility == structs.NodeSchedulingEligible {
		return structs.NewErrCoded(400, "can not set node's scheduling eligibility to eligible while it is draining")
	}
	args.UpdatedAt = time.Now().Unix()
	_, idx, err := n.srv.raftApply(structs.NodeUpdateEligibilityRequestType, args)
	if err != nil {
		return err
	}
	reply.NodeModifyIndex, reply.Index = idx, idx
	if node.SchedulingEligibility != args.Eligibility && args.Eligibility == structs.NodeSchedulingEligible {
		ids, eidx, err := n.srv.createNodeEvals(node.ID, idx)
		if err != nil {
			return err
		}
		reply.EvalIDs, reply.EvalCreateIndex = ids, eidx
	}
	return nil
}

// GetNode returns one node.
func (n *Node) GetNode(args *structs.NodeSpecificRequest, reply *structs.SingleNodeResponse) error {
	if done, err := n.srv.forward("Node.GetNode", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		node, err := st.NodeByID(ws, args.NodeID)
		if err != nil {
			return err
		}
		if node != nil {
			c := *node
			c.SecretID = ""
			node = &c
		}
		reply.Node = node
		if node != nil {
			reply.Index = node.ModifyIndex
		} else {
			reply.Index = maxIndex(st, "nodes")
		}
		return nil
	})
}

// List returns node stubs.
func (n *Node) List(args *structs.NodeListRequest, reply *structs.NodeListResponse) error {
	if done, err := n.srv.forward("Node.List", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	filter, err := compileFilter(args.Filter)
	if err != nil {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		iter, err := st.NodesByIDPrefix(ws, args.Prefix)
		if err != nil {
			return err
		}
		var all []*structs.Node
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			all = append(all, raw.(*structs.Node))
		}
		page, next, err := paginate(all, &args.QueryOptions, func(n *structs.Node) string { return n.ID }, keep[*structs.Node](filter))
		if err != nil {
			return err
		}
		out := make([]*structs.NodeListStub, 0, len(page))
		for _, node := range page {
			out = append(out, node.Stub(args.Resources, args.OS))
		}
		reply.Nodes, reply.NextToken = out, next
		reply.Index = maxIndex(st, "nodes")
		return nil
	})
}

// GetAllocs lists a node's allocations (operators).
func (n *Node) GetAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeAllocsResponse) error {
	if done, err := n.srv.forward("Node.GetAllocs", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		allocs, err := st.AllocsByNode(ws, args.NodeID)
		if err != nil {
			return err
		}
		if allocs == nil {
			allocs = []*structs.Allocation{}
		}
		sort.Slice(allocs, func(a, b int) bool { return allocs[a].CreateIndex > allocs[b].CreateIndex })
		reply.Allocs = allocs
		var idx uint64
		for _, a := range allocs {
			if a.ModifyIndex > idx {
				idx = a.ModifyIndex
			}
		}
		if idx == 0 {
			idx = maxIndex(st, "allocs")
		}
		reply.Index = idx
		return nil
	})
}

// GetClientAllocs is the client's blocking pull: alloc IDs on the node with
// their AllocModifyIndex.
//
// The answer's index is the node's own: the newest AllocModifyIndex of its
// allocations, or the last deletion of one. Only server-side changes move
// it, so the client's own status updates (ModifyIndex only) neither answer
// a parked pull nor wake it. The pull parks on the store's per-node channel,
// closed only by changes the client acts on (placements, desired status and
// transitions, job updates, lost/unknown, GC, the node's registration or
// removal), never by writes to other nodes; and a pull that arrives with the
// index the node's last answer had parks without reading the store. A
// parked pull costs nothing until its node changes, its time is up (then it
// reads and answers) or the server shuts down.
func (n *Node) GetClientAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeClientAllocsResponse) error {
	if done, err := n.srv.forward("Node.GetClientAllocs", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	if args.NodeID == "" {
		return structs.NewErrCoded(400, "missing node ID")
	}
	var timeout <-chan struct{}
	if args.MinQueryIndex > 0 {
		timeout = n.srv.waits.after(queryWait(args.MaxQueryTime))
	}
	first := n.srv.fsm.State()
	for {
		st := n.srv.fsm.State()
		// A snapshot restore replaced the state while the pull waited: the
		// client must learn what the restored state holds (and stop what
		// it does not) now, though its index may stay below the client's
		// for long.
		restored := st != first
		// Taken before reading so a change committed meanwhile wakes us.
		pull := st.NodePullWatch(args.NodeID)
		upToDate := pull.Known && pull.SecretID == args.SecretID && args.MinQueryIndex >= max(pull.Index, 1) && !restored
		if !upToDate || n.srv.isShutdown() {
			if err := n.clientAllocs(st, pull, args, reply); err != nil {
				return err
			}
			if args.MinQueryIndex == 0 || reply.Index > args.MinQueryIndex || restored || n.srv.isShutdown() {
				return nil
			}
		}
		select {
		case <-pull.Ch:
		case <-st.AbandonCh():
		case <-n.srv.shutdownCh:
		case <-timeout:
			// Time is up: answer with the current state.
			return n.clientAllocs(n.srv.fsm.State(), state.NodePull{}, args, reply)
		}
	}
}

// clientAllocs reads the pull's answer and remembers its index for pull's
// generation of the node.
func (n *Node) clientAllocs(st *state.StateStore, watch state.NodePull, args *structs.NodeSpecificRequest, reply *structs.NodeClientAllocsResponse) error {
	pull, err := st.NodeClientAllocs(args.NodeID, args.MinQueryIndex, args.ChangedAllocs)
	if err != nil {
		return err
	}
	node := pull.Node
	if node == nil {
		return structs.NewErrCoded(404, "node not found")
	}
	if args.SecretID != node.SecretID {
		return structs.NewErrCoded(403, "node secret ID does not match")
	}
	// pull.All is the state memo's slice, shared by every pull of this
	// version of the node's allocations: the encoder writes the answer's
	// table from it, and an in-process client (dev mode) gets a map of
	// its own (NodeClientAllocsResponse.InmemReply).
	reply.SetAllocsOf(pull.All)
	reply.Changed = pull.Changed
	reply.MigrateTokens = migrateTokens(st, args.NodeID, pull.Changed)
	// Never answer 0: a client's next pull would not block and the client
	// would spin. With 1 it waits for its first allocation.
	reply.Index = max(pull.Index, 1)
	if watch.Ch != nil {
		st.NodePullAnswered(args.NodeID, watch, reply.Index, node.SecretID)
	}
	n.srv.setQueryMeta(&reply.QueryMeta)
	return nil
}

// UpdateAlloc takes the client's alloc status updates. Calls from all
// clients are batched into one Raft entry every 50 ms.
func (n *Node) UpdateAlloc(args *structs.AllocUpdateRequest, reply *structs.GenericResponse) error {
	if done, err := n.srv.forward("Node.UpdateAlloc", args.Region, false, args, reply); done {
		return err
	}
	if len(args.Alloc) == 0 {
		return structs.NewErrCoded(400, "Cannot update empty allocation set")
	}
	st := n.srv.State()
	nodeID := args.Alloc[0].NodeID
	node, err := st.NodeByID(nil, nodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return structs.NewErrCoded(404, "node not found")
	}
	if args.AuthToken != node.SecretID {
		// Allocation status comes from the node that runs them.
		if err := n.srv.authorize(args.AuthToken, (*acl.ACL).AllowNodeWrite); err != nil {
			return err
		}
	}
	if node.Status == structs.NodeStatusDown || node.Status == structs.NodeStatusDisconnected {
		return structs.NewErrCoded(400, "node %s is not allowed to update allocs while in status %s", nodeID, node.Status)
	}
	now := time.Now()
	var evals []*structs.Evaluation
	for _, upd := range args.Alloc {
		if upd.NodeID != nodeID {
			return structs.NewErrCoded(400, "allocation updates in one call must come from one node")
		}
		upd.ModifyTime = now.UnixNano()
		existing, err := st.AllocByID(nil, upd.ID)
		if err != nil {
			return err
		}
		if existing == nil || existing.Job == nil {
			continue
		}
		failed := upd.ClientStatus == structs.AllocClientStatusFailed && existing.ClientStatus != structs.AllocClientStatusFailed &&
			!existing.ServerTerminalStatus()
		if failed && existing.FollowupEvalID != "" {
			// A follow-up still waiting handles the failure. One that is done
			// (the disconnect window's, canceled when the allocation came
			// back) does not: without an eval of its own the failure would
			// never be replaced.
			followup, err := st.EvalByID(nil, existing.FollowupEvalID)
			if err != nil {
				return err
			}
			failed = followup == nil || followup.TerminalStatus()
		}
		if !failed && existing.ClientStatus != structs.AllocClientStatusUnknown {
			// Most updates (pending -> running, a task's events) need no
			// evaluation: skip the job lookup.
			continue
		}
		job, err := st.JobByID(nil, existing.Namespace, existing.JobID)
		if err != nil {
			return err
		}
		switch {
		case job == nil || job.Stop:
			// nothing to reschedule
		case failed:
			evals = append(evals, &structs.Evaluation{ID: newID(), Namespace: existing.Namespace,
				Priority: job.Priority, Type: job.Type, TriggeredBy: structs.EvalTriggerRetryFailedAlloc,
				JobID: existing.JobID, JobModifyIndex: job.JobModifyIndex, Status: structs.EvalStatusPending,
				CreateTime: now.UnixNano(), ModifyTime: now.UnixNano()})
		case existing.ClientStatus == structs.AllocClientStatusUnknown:
			evals = append(evals, &structs.Evaluation{ID: newID(), Namespace: existing.Namespace,
				Priority: job.Priority, Type: job.Type, TriggeredBy: structs.EvalTriggerReconnect,
				JobID: existing.JobID, JobModifyIndex: job.JobModifyIndex, Status: structs.EvalStatusPending,
				CreateTime: now.UnixNano(), ModifyTime: now.UnixNano()})
		}
	}
	idx, err := n.srv.allocBatch.add(args.Alloc, evals)
	if err != nil {
		return err
	}
	reply.Index = idx
	return nil
}

// createNodeEvals makes one node-update eval per job with live allocs on the
// node, plus one per system or sysbatch job the node is in scope of (so a
// node that becomes ready receives its system allocs), written in one
// entry.
func (s *Server) createNodeEvals(nodeID string, index uint64) ([]string, uint64, error) {
	evals, err := s.nodeUpdateEvals([]string{nodeID}, index)
	if err != nil {
		return nil, 0, err
	}
	seen := make(map[structs.NamespacedID]bool, len(evals))
	for _, e := range evals {
		seen[structs.NamespacedID{Namespace: e.Namespace, ID: e.JobID}] = true
	}
	sysEvals, err := s.systemJobEvals(nodeID, index, seen, time.Now().UnixNano())
	if err != nil {
		return nil, 0, err
	}
	evals = append(evals, sysEvals...)
	if len(evals) == 0 {
		return nil, 0, nil
	}
	ids := make([]string, len(evals))
	for i, e := range evals {
		ids[i] = e.ID
	}
	_, idx, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals})
	return ids, idx, err
}

// systemJobEvals returns a node-update eval for every running system or
// sysbatch job whose datacenters and node pool include the node, skipping
// jobs already in seen. Periodic and parameterized parents are skipped:
// only their children run.
func (s *Server) systemJobEvals(nodeID string, index uint64, seen map[structs.NamespacedID]bool, now int64) ([]*structs.Evaluation, error) {
	st := s.State()
	node, err := st.NodeByID(nil, nodeID)
	if err != nil || node == nil {
		return nil, err
	}
	iter, err := st.Jobs(nil)
	if err != nil {
		return nil, err
	}
	var out []*structs.Evaluation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		job := raw.(*structs.Job)
		if job.Type != structs.JobTypeSystem && job.Type != structs.JobTypeSysBatch {
			continue
		}
		key := job.NamespacedID()
		if seen[key] || job.Stop || job.IsPeriodic() || job.IsParameterized() || !feasible.InJobScope(node, job) {
			continue
		}
		seen[key] = true
		out = append(out, &structs.Evaluation{ID: newID(), Namespace: job.Namespace, Priority: job.Priority, Type: job.Type,
			TriggeredBy: structs.EvalTriggerNodeUpdate, JobID: job.ID, JobModifyIndex: job.JobModifyIndex,
			NodeID: nodeID, NodeModifyIndex: index, Status: structs.EvalStatusPending, CreateTime: now, ModifyTime: now})
	}
	return out, nil
}

func (s *Server) serverInfo() []*structs.NodeServerInfo {
	peers, err := s.Peers()
	if err != nil {
		return nil
	}
	out := make([]*structs.NodeServerInfo, 0, len(peers))
	for _, p := range peers {
		out = append(out, &structs.NodeServerInfo{RPCAdvertiseAddr: p, Datacenter: s.config.Datacenter})
	}
	return out
}
