package server

import (
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Status reports on the cluster itself.
type Status struct{ srv *Server }

// Ping answers if the server is up.
func (s *Status) Ping(args *structs.GenericRequest, reply *struct{}) error { return nil }

// Leader returns the leader's RPC address ("" when none).
func (s *Status) Leader(args *structs.GenericRequest, reply *string) error {
	if args.Region != "" && args.Region != s.srv.config.Region {
		return s.srv.forwardRegion(args.Region, "Status.Leader", args, reply)
	}
	*reply = s.srv.LeaderAddr()
	return nil
}

// Peers returns the Raft voters' addresses.
func (s *Status) Peers(args *structs.GenericRequest, reply *[]string) error {
	if args.Region != "" && args.Region != s.srv.config.Region {
		return s.srv.forwardRegion(args.Region, "Status.Peers", args, reply)
	}
	peers, err := s.srv.Peers()
	if err != nil {
		return err
	}
	sort.Strings(peers)
	*reply = peers
	return nil
}

// Region lists known regions.
type Region struct{ srv *Server }

// List returns the regions this server can reach: its own and those with
// an alive server in its gossip pool, sorted.
func (r *Region) List(args *structs.GenericRequest, reply *[]string) error {
	*reply = r.srv.knownRegions()
	return nil
}

// Namespace serves namespaces.
type Namespace struct{ srv *Server }

// ListNamespaces lists namespaces.
func (n *Namespace) ListNamespaces(args *structs.GenericRequest, reply *structs.NamespaceListResponse) error {
	if done, err := n.srv.forward("Namespace.ListNamespaces", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	readable, err := n.srv.namespaceReadable(&args.QueryOptions)
	if err != nil {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		iter, err := st.Namespaces(ws)
		if err != nil {
			return err
		}
		out := []*structs.Namespace{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			ns := raw.(*structs.Namespace)
			if (args.Prefix == "" || hasPrefixFold(ns.Name, args.Prefix)) && readable(ns.Name) {
				out = append(out, ns)
			}
		}
		reply.Namespaces = out
		reply.Index = maxIndex(st, "namespaces")
		return nil
	})
}

// GetNamespace returns one namespace.
func (n *Namespace) GetNamespace(args *structs.NamespaceSpecificRequest, reply *structs.SingleNamespaceResponse) error {
	if done, err := n.srv.forward("Namespace.GetNamespace", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		ns, err := st.NamespaceByName(ws, args.Name)
		if err != nil {
			return err
		}
		reply.Namespace = ns
		reply.Index = maxIndex(st, "namespaces")
		return nil
	})
}
