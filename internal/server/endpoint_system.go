package server

import (
	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// System is the endpoint of cluster-wide maintenance: forced garbage
// collection and job summary repair.
type System struct{ srv *Server }

// GarbageCollect collects everything eligible now, every threshold
// ignored (`PUT /v1/system/gc`). Nomad enqueues a core evaluation and
// answers at once; Drover answers when the collection is committed, with
// what it removed.
func (s *System) GarbageCollect(args *structs.SystemGCRequest, reply *structs.SystemGCResponse) error {
	if done, err := s.srv.forward("System.GarbageCollect", args.Region, false, args, reply); done {
		return err
	}
	if err := s.srv.authorizeManagement(args.AuthToken); err != nil {
		return err
	}
	res, err := s.srv.coreGC(nil, true)
	if err != nil {
		return err
	}
	*reply = *res
	return nil
}

// ReconcileJobSummaries recounts every job's summary from its allocations
// (`PUT /v1/system/reconcile/summaries`).
func (s *System) ReconcileJobSummaries(args *structs.ReconcileJobSummariesRequest, reply *structs.GenericResponse) error {
	if done, err := s.srv.forward("System.ReconcileJobSummaries", args.Region, false, args, reply); done {
		return err
	}
	if err := s.srv.authorizeManagement(args.AuthToken); err != nil {
		return err
	}
	_, index, err := s.srv.raftApply(structs.ReconcileJobSummariesRequestType, &structs.ReconcileJobSummariesRequest{})
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// Count counts evaluations (`GET /v1/evaluations/count`): the list's
// namespace, prefix and filter apply.
func (e *Eval) Count(args *structs.EvalCountRequest, reply *structs.EvalCountResponse) error {
	if done, err := e.srv.forward("Eval.Count", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	filter, err := compileFilter(args.Filter)
	if err != nil {
		return err
	}
	return e.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		iter, err := st.EvalsByIDPrefix(ws, ns, args.Prefix)
		if err != nil {
			return err
		}
		n := 0
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if filter != nil {
				ok, err := filter.match(raw.(*structs.Evaluation))
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
			}
			n++
		}
		reply.Count = n
		reply.Index = maxIndex(st, "evals")
		return nil
	})
}
