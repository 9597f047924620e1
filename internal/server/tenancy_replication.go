package server

import (
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Namespaces and node pools are replicated as Nomad does: the
// authoritative region owns them, the leader of every other region mirrors
// them with the ACL replication's loop (acl_replication.go), and writes of
// them made elsewhere are forwarded to the authoritative region. As in
// Nomad, these loops run only where the ACL ones do (ACLs on, region not
// authoritative): they read with the replication token.
//
// Two things are this region's own and never replicated: the built-in
// node pools "default" and "all" (every region has them, with its own
// description and meta), and what is still in use here. A namespace or pool
// deleted upstream that still holds this region's jobs (or nodes, or is a
// namespace's default pool) is kept, logged and reported in the
// replication status until it is free, while the rest keeps replicating.

func (s *Server) namespaceKind() replicatedKind[structs.Namespace] {
	return replicatedKind[structs.Namespace]{
		name: "namespaces",
		fetch: func(q structs.QueryOptions) ([]*structs.Namespace, uint64, error) {
			var r structs.NamespaceListResponse
			err := s.RPC("Namespace.ListNamespaces", &structs.GenericRequest{QueryOptions: q}, &r)
			return r.Namespaces, r.Index, err
		},
		local: func(st *state.StateStore) ([]*structs.Namespace, error) {
			iter, err := st.Namespaces(nil)
			if err != nil {
				return nil, err
			}
			var out []*structs.Namespace
			for raw := iter.Next(); raw != nil; raw = iter.Next() {
				out = append(out, raw.(*structs.Namespace))
			}
			return out, nil
		},
		key:        func(ns *structs.Namespace) string { return ns.Name },
		same:       sameIgnoringIndexes[structs.Namespace],
		upsertType: structs.NamespaceUpsertRequestType,
		upsert: func(ns []*structs.Namespace) any {
			return &structs.NamespaceUpsertRequest{Namespaces: ns}
		},
		deleteType: structs.NamespaceDeleteRequestType,
		deleteReq:  func(names []string) any { return &structs.NamespaceDeleteRequest{Namespaces: names} },
		// "default" is replicated (its description) but never deleted:
		// the authoritative region always has it, and the store refuses.
		deletable: func(st *state.StateStore, name string) error { return st.NamespaceDeletable(name) },
	}
}

func (s *Server) nodePoolKind() replicatedKind[structs.NodePool] {
	return replicatedKind[structs.NodePool]{
		name: "node-pools",
		fetch: func(q structs.QueryOptions) ([]*structs.NodePool, uint64, error) {
			var r structs.NodePoolListResponse
			err := s.RPC("NodePool.List", &structs.GenericRequest{QueryOptions: q}, &r)
			return r.NodePools, r.Index, err
		},
		local: func(st *state.StateStore) ([]*structs.NodePool, error) {
			iter, err := st.NodePools(nil)
			if err != nil {
				return nil, err
			}
			var out []*structs.NodePool
			for raw := iter.Next(); raw != nil; raw = iter.Next() {
				out = append(out, raw.(*structs.NodePool))
			}
			return out, nil
		},
		key:        func(p *structs.NodePool) string { return p.Name },
		same:       sameIgnoringIndexes[structs.NodePool],
		upsertType: structs.NodePoolUpsertRequestType,
		upsert: func(ps []*structs.NodePool) any {
			return &structs.NodePoolUpsertRequest{NodePools: ps}
		},
		deleteType: structs.NodePoolDeleteRequestType,
		deleteReq:  func(names []string) any { return &structs.NodePoolDeleteRequest{Names: names} },
		builtin:    structs.IsBuiltinNodePool,
		deletable:  func(st *state.StateStore, name string) error { return st.NodePoolDeletable(name) },
	}
}

// tenancyToAuthoritative sends a namespace or node pool write made in a
// region that replicates them to the authoritative region, which owns them
// (they come back through replication). A request aimed at another region
// goes there as it is.
func (s *Server) tenancyToAuthoritative(wr *structs.WriteRequest) {
	if s.replicatesACLs() && (wr.Region == "" || wr.Region == s.config.Region) {
		wr.Region = s.authoritativeRegion()
	}
}

// namespacesIdleInOtherRegions refuses, in an authoritative region with
// ACLs on (whose namespaces other regions replicate), the delete of a
// namespace in which another region still has a job that is not dead, as
// Nomad does (asking each region with the caller's token). Dead jobs are
// left to that region: replication keeps the namespace there until they
// are purged (namespaceKind's deletable).
func (s *Server) namespacesIdleInOtherRegions(names []string, token string) error {
	if !s.config.ACLEnabled || s.replicatesACLs() {
		return nil
	}
	for _, name := range names {
		var busy []string
		for _, region := range s.knownRegions() {
			if region == s.config.Region {
				continue
			}
			var reply structs.JobListResponse
			req := &structs.JobListRequest{QueryOptions: structs.QueryOptions{Region: region, Namespace: name, AuthToken: token}}
			if err := s.RPC("Job.List", req, &reply); err != nil {
				return err
			}
			for _, j := range reply.Jobs {
				if j.Status != structs.JobStatusDead {
					busy = append(busy, region)
					break
				}
			}
		}
		if len(busy) > 0 {
			return structs.NewErrCoded(400, "namespace %q has non-terminal jobs in regions: %v", name, busy)
		}
	}
	return nil
}
