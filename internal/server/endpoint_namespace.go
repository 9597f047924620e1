package server

import (
	"sort"

	"github.com/drover-project/drover/internal/structs"
)

// UpsertNamespaces creates or updates namespaces. Every namespace is
// validated (Nomad's name and description rules), and a default node pool
// it names must exist. Made in a region that replicates namespaces, the
// write goes to the authoritative region (tenancy_replication.go).
func (n *Namespace) UpsertNamespaces(args *structs.NamespaceUpsertRequest, reply *structs.GenericResponse) error {
	n.srv.tenancyToAuthoritative(&args.WriteRequest)
	if done, err := n.srv.forward("Namespace.UpsertNamespaces", args.Region, false, args, reply); done {
		return err
	}
	if err := n.srv.authorizeManagement(args.AuthToken); err != nil {
		return err
	}
	if len(args.Namespaces) == 0 {
		return structs.NewErrCoded(400, "must specify at least one namespace")
	}
	st := n.srv.State()
	out := make([]*structs.Namespace, 0, len(args.Namespaces))
	for _, ns := range args.Namespaces {
		if ns == nil {
			return structs.NewErrCoded(400, "missing namespace")
		}
		if err := ns.Validate(); err != nil {
			return structs.NewErrCoded(400, "Invalid namespace %q: %v", ns.Name, err)
		}
		if c := ns.NodePoolConfiguration; c != nil && c.Default != "" {
			pool, err := st.NodePoolByName(nil, c.Default)
			if err != nil {
				return err
			}
			if pool == nil {
				return structs.NewErrCoded(400, "Invalid namespace %q: default node pool %q does not exist", ns.Name, c.Default)
			}
		}
		c := ns.Copy()
		c.CreateIndex, c.ModifyIndex = 0, 0
		out = append(out, c)
	}
	_, idx, err := n.srv.raftApply(structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{Namespaces: out, WriteRequest: args.WriteRequest})
	if err != nil {
		return err
	}
	reply.Index = idx
	return nil
}

// DeleteNamespaces deletes namespaces. "default" can never be deleted; a
// namespace that still holds jobs is refused (purge them first), and so,
// in the authoritative region, is one with jobs not yet dead in a region
// that replicates it. Made in a region that replicates namespaces, the
// delete goes to the authoritative region.
func (n *Namespace) DeleteNamespaces(args *structs.NamespaceDeleteRequest, reply *structs.GenericResponse) error {
	n.srv.tenancyToAuthoritative(&args.WriteRequest)
	if done, err := n.srv.forward("Namespace.DeleteNamespaces", args.Region, false, args, reply); done {
		return err
	}
	if err := n.srv.authorizeManagement(args.AuthToken); err != nil {
		return err
	}
	if len(args.Namespaces) == 0 {
		return structs.NewErrCoded(400, "must specify at least one namespace to delete")
	}
	st := n.srv.State()
	for _, name := range args.Namespaces {
		if err := st.NamespaceDeletable(name); err != nil {
			return err
		}
	}
	if err := n.srv.namespacesIdleInOtherRegions(args.Namespaces, args.AuthToken); err != nil {
		return err
	}
	_, idx, err := n.srv.raftApply(structs.NamespaceDeleteRequestType, &structs.NamespaceDeleteRequest{Namespaces: args.Namespaces, WriteRequest: args.WriteRequest})
	if err != nil {
		return err
	}
	reply.Index = idx
	return nil
}

// jobNamespaceCheck resolves a job's node pool from its namespace (the
// namespace's default pool when the job names none, else "default") and
// refuses a job that uses what the namespace disables: a task driver, a
// network mode or a node pool. It runs before the job is canonicalized.
func jobNamespaceCheck(ns *structs.Namespace, job *structs.Job) error {
	if job.NodePool == "" {
		job.NodePool = ns.DefaultNodePool()
	}
	if !ns.NodePoolAllowed(job.NodePool) {
		return structs.NewErrCoded(400, "namespace %q does not allow jobs to use node pool %q", ns.Name, job.NodePool)
	}
	var drivers, modes []string
	seenDriver, seenMode := map[string]bool{}, map[string]bool{}
	for _, tg := range job.TaskGroups {
		if tg == nil {
			continue
		}
		for _, net := range tg.Networks {
			if net == nil {
				continue
			}
			mode := net.Mode
			if mode == "" {
				mode = "host"
			}
			if !ns.NetworkModeAllowed(mode) && !seenMode[mode] {
				seenMode[mode] = true
				modes = append(modes, mode)
			}
		}
		for _, t := range tg.Tasks {
			if t == nil {
				continue
			}
			if !ns.TaskDriverAllowed(t.Driver) && !seenDriver[t.Driver] {
				seenDriver[t.Driver] = true
				drivers = append(drivers, t.Driver)
			}
		}
	}
	sort.Strings(drivers)
	sort.Strings(modes)
	switch {
	case len(drivers) > 0:
		return structs.NewErrCoded(400, "used task driver %q is not allowed in namespace %q", drivers[0], ns.Name)
	case len(modes) > 0:
		return structs.NewErrCoded(400, "used network mode %q is not allowed in namespace %q", modes[0], ns.Name)
	}
	return nil
}

// admitNamespace checks a submitted job against the state before it is
// canonicalized: its namespace must exist and allow what it uses, and its
// node pool (resolved from the namespace when unset) must exist.
func (s *Server) admitNamespace(job *structs.Job) error {
	if job == nil {
		return nil
	}
	st := s.State()
	ns, err := st.NamespaceByName(nil, namespaceOf(job.Namespace))
	if err != nil {
		return err
	}
	if ns == nil {
		return structs.NewErrCoded(400, "job %q is in nonexistent namespace %q", job.ID, namespaceOf(job.Namespace))
	}
	if err := jobNamespaceCheck(ns, job); err != nil {
		return err
	}
	pool, err := st.NodePoolByName(nil, job.NodePool)
	if err != nil {
		return err
	}
	if pool == nil {
		return structs.NewErrCoded(400, "job %q is in nonexistent node pool %q", job.ID, job.NodePool)
	}
	return nil
}
