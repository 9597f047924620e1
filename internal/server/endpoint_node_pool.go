package server

import (
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// NodePool serves node pools: the built-in "default" and "all" and the
// ones operators create (or nodes create by registering into them).
type NodePool struct{ srv *Server }

// List lists node pools in name order (?prefix, ?filter, pagination).
func (p *NodePool) List(args *structs.GenericRequest, reply *structs.NodePoolListResponse) error {
	if done, err := p.srv.forward("NodePool.List", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	filter, err := compileFilter(args.Filter)
	if err != nil {
		return err
	}
	readable, err := p.srv.nodePoolReadable(&args.QueryOptions)
	if err != nil {
		return err
	}
	return p.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		iter, err := st.NodePools(ws)
		if err != nil {
			return err
		}
		var all []*structs.NodePool
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if pool := raw.(*structs.NodePool); args.Prefix == "" || hasPrefixFold(pool.Name, args.Prefix) {
				all = append(all, pool)
			}
		}
		all = onlyReadable(all, readable, func(p *structs.NodePool) string { return p.Name })
		page, next, err := paginate(all, &args.QueryOptions, func(p *structs.NodePool) string { return p.Name }, keep[*structs.NodePool](filter))
		if err != nil {
			return err
		}
		reply.NodePools, reply.NextToken = page, next
		reply.Index = maxIndex(st, "node_pools")
		return nil
	})
}

// GetNodePool returns one pool (nil when there is none of that name).
func (p *NodePool) GetNodePool(args *structs.NodePoolSpecificRequest, reply *structs.SingleNodePoolResponse) error {
	if done, err := p.srv.forward("NodePool.GetNodePool", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	return p.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		pool, err := st.NodePoolByName(ws, args.Name)
		if err != nil {
			return err
		}
		reply.NodePool = pool
		reply.Index = maxIndex(st, "node_pools")
		return nil
	})
}

// UpsertNodePools creates or updates pools. "all" cannot be changed, and
// of "default" only the description and meta. Made in a region that
// replicates node pools, a write of other pools goes to the authoritative
// region (tenancy_replication.go); the built-in pools are each region's own.
func (p *NodePool) UpsertNodePools(args *structs.NodePoolUpsertRequest, reply *structs.GenericResponse) error {
	var builtin, replicated int
	for _, np := range args.NodePools {
		switch {
		case np == nil:
		case structs.IsBuiltinNodePool(np.Name):
			builtin++
		default:
			replicated++
		}
	}
	if builtin > 0 && replicated > 0 && p.srv.replicatesACLs() {
		return structs.NewErrCoded(400, "cannot write built-in and replicated node pools in one request")
	}
	if builtin == 0 {
		p.srv.tenancyToAuthoritative(&args.WriteRequest)
	}
	if done, err := p.srv.forward("NodePool.UpsertNodePools", args.Region, false, args, reply); done {
		return err
	}
	if err := p.srv.authorize(args.AuthToken, func(a *acl.ACL) bool {
		for _, np := range args.NodePools {
			if np == nil || !a.AllowNodePoolOperation(np.Name, "write") {
				return false
			}
		}
		return true
	}); err != nil {
		return err
	}
	if len(args.NodePools) == 0 {
		return structs.NewErrCoded(400, "must specify at least one node pool")
	}
	st := p.srv.State()
	out := make([]*structs.NodePool, 0, len(args.NodePools))
	for _, in := range args.NodePools {
		if in == nil {
			return structs.NewErrCoded(400, "missing node pool")
		}
		if err := in.Validate(); err != nil {
			return structs.NewErrCoded(400, "invalid node pool %q: %v", in.Name, err)
		}
		switch in.Name {
		case structs.AllNodePool:
			return structs.NewErrCoded(400, "modifying node pool %q is not allowed", structs.AllNodePool)
		case structs.DefaultNodePool:
			cur, err := st.NodePoolByName(nil, in.Name)
			if err != nil {
				return err
			}
			if in.SchedulerConfiguration != nil || (cur != nil && in.NodeIdentityTTL != cur.NodeIdentityTTL) {
				return structs.NewErrCoded(400, "only the description and meta of node pool %q can be changed", structs.DefaultNodePool)
			}
		}
		c := in.Copy()
		c.CreateIndex, c.ModifyIndex = 0, 0
		out = append(out, c)
	}
	_, idx, err := p.srv.raftApply(structs.NodePoolUpsertRequestType, &structs.NodePoolUpsertRequest{NodePools: out, WriteRequest: args.WriteRequest})
	if err != nil {
		return err
	}
	reply.Index = idx
	return nil
}

// DeleteNodePools deletes pools. Built-in pools and pools that still have
// nodes or jobs are refused. Made in a region that replicates node pools,
// the delete goes to the authoritative region.
func (p *NodePool) DeleteNodePools(args *structs.NodePoolDeleteRequest, reply *structs.GenericResponse) error {
	p.srv.tenancyToAuthoritative(&args.WriteRequest)
	if done, err := p.srv.forward("NodePool.DeleteNodePools", args.Region, false, args, reply); done {
		return err
	}
	if err := p.srv.authorize(args.AuthToken, func(a *acl.ACL) bool {
		for _, n := range args.Names {
			if !a.AllowNodePoolOperation(n, "delete") {
				return false
			}
		}
		return true
	}); err != nil {
		return err
	}
	if len(args.Names) == 0 {
		return structs.NewErrCoded(400, "must specify at least one node pool to delete")
	}
	st := p.srv.State()
	for _, name := range args.Names {
		if err := st.NodePoolDeletable(name); err != nil {
			return err
		}
	}
	_, idx, err := p.srv.raftApply(structs.NodePoolDeleteRequestType, &structs.NodePoolDeleteRequest{Names: args.Names, WriteRequest: args.WriteRequest})
	if err != nil {
		return err
	}
	reply.Index = idx
	return nil
}

// ListNodes lists the nodes of a pool ("all": every node). A pool that
// does not exist is a 404.
func (p *NodePool) ListNodes(args *structs.NodePoolSpecificRequest, reply *structs.NodePoolNodesResponse) error {
	if done, err := p.srv.forward("NodePool.ListNodes", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	filter, err := compileFilter(args.Filter)
	if err != nil {
		return err
	}
	return p.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		pool, err := st.NodePoolByName(ws, args.Name)
		if err != nil {
			return err
		}
		if pool == nil {
			return structs.NewErrCoded(404, "node pool %q not found", args.Name)
		}
		iter, err := st.NodesByIDPrefix(ws, args.Prefix)
		if err != nil {
			return err
		}
		var all []*structs.Node
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if n := raw.(*structs.Node); args.Name == structs.AllNodePool || n.NodePool == args.Name {
				all = append(all, n)
			}
		}
		page, next, err := paginate(all, &args.QueryOptions, func(n *structs.Node) string { return n.ID }, keep[*structs.Node](filter))
		if err != nil {
			return err
		}
		out := make([]*structs.NodeListStub, 0, len(page))
		for _, n := range page {
			out = append(out, n.Stub(false, false))
		}
		reply.Nodes, reply.NextToken = out, next
		reply.Index = maxIndex(st, "nodes", "node_pools")
		return nil
	})
}

// ListJobs lists the jobs of a pool in the request's namespace ("*": the
// namespaces the token may read). A pool that does not exist is a 404.
func (p *NodePool) ListJobs(args *structs.NodePoolSpecificRequest, reply *structs.NodePoolJobsResponse) error {
	if done, err := p.srv.forward("NodePool.ListJobs", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	filter, err := compileFilter(args.Filter)
	if err != nil {
		return err
	}
	readable, err := p.srv.listNamespaces(&args.QueryOptions)
	if err != nil {
		return err
	}
	ns := namespaceOf(args.Namespace)
	return p.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		pool, err := st.NodePoolByName(ws, args.Name)
		if err != nil {
			return err
		}
		if pool == nil {
			return structs.NewErrCoded(404, "node pool %q not found", args.Name)
		}
		iter, err := st.JobsByIDPrefix(ws, ns, args.Prefix)
		if err != nil {
			return err
		}
		var all []*structs.Job
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if j := raw.(*structs.Job); j.NodePool == args.Name {
				all = append(all, j)
			}
		}
		all = onlyReadable(all, readable, func(j *structs.Job) string { return j.Namespace })
		sort.SliceStable(all, func(a, b int) bool {
			if all[a].Namespace != all[b].Namespace {
				return all[a].Namespace < all[b].Namespace
			}
			return all[a].ID < all[b].ID
		})
		page, next, err := paginate(all, &args.QueryOptions, func(j *structs.Job) string { return j.Namespace + "/" + j.ID }, keep[*structs.Job](filter))
		if err != nil {
			return err
		}
		out := make([]*structs.JobListStub, 0, len(page))
		for _, j := range page {
			sum, err := st.JobSummaryByID(ws, j.Namespace, j.ID)
			if err != nil {
				return err
			}
			out = append(out, j.Stub(sum))
		}
		reply.Jobs, reply.NextToken = out, next
		reply.Index = maxIndex(st, "jobs", "node_pools")
		return nil
	})
}
