package server

import (
	"sort"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Alloc is the RPC endpoint for allocations.
type Alloc struct{ srv *Server }

// List returns allocation stubs.
func (a *Alloc) List(args *structs.AllocListRequest, reply *structs.AllocListResponse) error {
	if done, err := a.srv.forward("Alloc.List", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	filter, err := compileFilter(args.Filter)
	if err != nil {
		return err
	}
	readable, err := a.srv.listNamespaces(&args.QueryOptions)
	if err != nil {
		return err
	}
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		iter, err := st.AllocsByIDPrefix(ws, ns, args.Prefix)
		if err != nil {
			return err
		}
		var all []*structs.Allocation
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			all = append(all, raw.(*structs.Allocation))
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].CreateIndex > all[j].CreateIndex })
		all = onlyReadable(all, readable, func(a *structs.Allocation) string { return a.Namespace })
		page, next, err := paginate(all, &args.QueryOptions, func(a *structs.Allocation) string { return a.ID }, keep[*structs.Allocation](filter))
		if err != nil {
			return err
		}
		out := make([]*structs.AllocListStub, 0, len(page))
		for _, a := range page {
			if args.Resources {
				out = append(out, a.StubWithResources())
			} else {
				out = append(out, a.Stub())
			}
		}
		reply.Allocations, reply.NextToken = out, next
		reply.Index = maxIndex(st, "allocs")
		return nil
	})
}

// GetAlloc returns one allocation (with its job).
func (a *Alloc) GetAlloc(args *structs.AllocSpecificRequest, reply *structs.SingleAllocResponse) error {
	if done, err := a.srv.forward("Alloc.GetAlloc", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	return a.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		alloc, err := st.AllocByID(ws, args.AllocID)
		if err != nil {
			return err
		}
		reply.Alloc = alloc
		if alloc != nil {
			reply.Index = alloc.ModifyIndex
		} else {
			reply.Index = maxIndex(st, "allocs")
		}
		return nil
	})
}

// GetAllocs returns several allocations; clients use it after a pull. It
// waits until the local state has reached MinQueryIndex so a follower never
// answers with allocations older than what the client was told about.
func (a *Alloc) GetAllocs(args *structs.AllocsGetRequest, reply *structs.AllocsGetResponse) error {
	if done, err := a.srv.forward("Alloc.GetAllocs", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	if err := a.srv.authorizeNodeOrManagement(args.AuthToken); err != nil {
		return err
	}
	opts := args.QueryOptions
	return a.srv.blockingRPC(&opts, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		allocs, err := st.AllocsByIDs(ws, args.AllocIDs)
		if err != nil {
			return err
		}
		reply.Allocs = allocs
		var idx uint64
		for _, alloc := range allocs {
			idx = max(idx, alloc.ModifyIndex)
		}
		if latest := maxIndex(st, "allocs"); latest >= args.MinQueryIndex && idx <= args.MinQueryIndex {
			// The state is current enough; report it so we don't block.
			idx = latest
		}
		reply.Index = idx
		return nil
	})
}

// Stop stops an allocation; the scheduler replaces it.
func (a *Alloc) Stop(args *structs.AllocStopRequest, reply *structs.AllocStopResponse) error {
	if done, err := a.srv.forward("Alloc.Stop", args.Region, false, args, reply); done {
		return err
	}
	if err := a.srv.authorizeAlloc(args.AuthToken, args.AllocID, acl.NamespaceCapabilityAllocLifecycle); err != nil {
		return err
	}
	st := a.srv.State()
	alloc, err := st.AllocByID(nil, args.AllocID)
	if err != nil {
		return err
	}
	if alloc == nil {
		return structs.NewErrCoded(404, "allocation not found")
	}
	now := time.Now().UnixNano()
	prio := structs.JobDefaultPriority
	jobType := structs.JobTypeService
	if alloc.Job != nil {
		prio, jobType = alloc.Job.Priority, alloc.Job.Type
	}
	eval := &structs.Evaluation{ID: newID(), Namespace: alloc.Namespace, Priority: prio, Type: jobType,
		TriggeredBy: structs.EvalTriggerAllocStop, JobID: alloc.JobID, Status: structs.EvalStatusPending,
		CreateTime: now, ModifyTime: now}
	stop := &structs.Allocation{ID: alloc.ID, NodeID: alloc.NodeID, DesiredStatus: structs.AllocDesiredStatusStop,
		DesiredDescription: "alloc was stopped by an operator", ModifyTime: now}
	t := true
	stop.DesiredTransition.Reschedule = &t
	if args.NoShutdownDelay {
		stop.DesiredTransition.NoShutdownDelay = &t
	}
	req := &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{stop}, UpdatedAt: now,
		PreemptionEvals: []*structs.Evaluation{eval}}
	_, idx, err := a.srv.raftApply(structs.ApplyPlanResultsRequestType, req)
	if err != nil {
		return err
	}
	reply.EvalID, reply.Index = eval.ID, idx
	return nil
}
