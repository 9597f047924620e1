package server

import (
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Scaling serves the scaling policies of jobs (the `scaling` blocks),
// as an external autoscaler reads them.
type Scaling struct{ srv *Server }

// ListPolicies lists the policies of a namespace ("*": all), filtered by
// job and by type prefix.
func (s *Scaling) ListPolicies(args *structs.ScalingPolicyListRequest, reply *structs.ScalingPolicyListResponse) error {
	if done, err := s.srv.forward("Scaling.ListPolicies", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	readable, err := s.srv.listNamespaces(&args.QueryOptions)
	if err != nil {
		return err
	}
	return s.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		var ps []*structs.ScalingPolicy
		if args.Job != "" && ns != "*" {
			var err error
			if ps, err = st.ScalingPoliciesByJob(ws, ns, args.Job); err != nil {
				return err
			}
		} else {
			iter, err := st.ScalingPolicies(ws)
			if err != nil {
				return err
			}
			for raw := iter.Next(); raw != nil; raw = iter.Next() {
				p := raw.(*structs.ScalingPolicy)
				if (ns == "*" || p.Namespace == ns) && (args.Job == "" || p.Target[structs.ScalingTargetJob] == args.Job) {
					ps = append(ps, p)
				}
			}
		}
		ps = onlyReadable(ps, readable, func(p *structs.ScalingPolicy) string { return p.Namespace })
		out := make([]*structs.ScalingPolicyListStub, 0, len(ps))
		for _, p := range ps {
			if args.Type != "" && !strings.HasPrefix(p.Type, args.Type) {
				continue
			}
			out = append(out, structs.ScalingPolicyStub(p))
		}
		reply.Policies = out
		reply.Index = policyIndex(st)
		return nil
	})
}

// GetPolicy returns one policy by ID; an unknown ID answers 404.
func (s *Scaling) GetPolicy(args *structs.ScalingPolicySpecificRequest, reply *structs.SingleScalingPolicyResponse) error {
	if done, err := s.srv.forward("Scaling.GetPolicy", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	return s.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		p, err := st.ScalingPolicyByID(ws, args.ID)
		if err != nil {
			return err
		}
		reply.Policy = p
		if p != nil {
			reply.Index = p.ModifyIndex
		} else {
			reply.Index = policyIndex(st)
		}
		return nil
	})
}

// policyIndex is the last write to the policies, at least 1: a blocking
// query (an autoscaler's) waits on the index it was given, and 0 would not
// block.
func policyIndex(st *state.StateSnapshot) uint64 {
	if idx := maxIndex(st, "scaling_policy"); idx > 0 {
		return idx
	}
	return 1
}
