package server

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// ServiceRegistration serves Nomad-native service discovery: clients
// register the services of their running allocations; readers list them
// per namespace or by name; operators delete a stale one.
type ServiceRegistration struct{ srv *Server }

// Upsert stores registrations sent by the node that runs their
// allocations. Each allocation must exist on that node.
func (s *ServiceRegistration) Upsert(args *structs.ServiceRegistrationUpsertRequest, reply *structs.GenericResponse) error {
	if done, err := s.srv.forward("ServiceRegistration.Upsert", args.Region, false, args, reply); done {
		return err
	}
	if len(args.Services) == 0 {
		return structs.NewErrCoded(400, "must specify at least one service registration")
	}
	st := s.srv.State()
	nodeID := ""
	for _, r := range args.Services {
		if err := structs.ValidateServiceRegistration(r); err != nil {
			return err
		}
		if nodeID == "" {
			nodeID = r.NodeID
		}
		if r.NodeID != nodeID {
			return structs.NewErrCoded(400, "service registrations in one call must come from one node")
		}
		a, err := st.AllocByID(nil, r.AllocID)
		if err != nil {
			return err
		}
		if a == nil || a.NodeID != r.NodeID || a.Namespace != r.Namespace || a.JobID != r.JobID {
			return structs.NewErrCoded(400, "service registration %q: allocation %s is not of job %q on node %s", r.ID, r.AllocID, r.JobID, r.NodeID)
		}
	}
	node, err := st.NodeByID(nil, nodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return structs.NewErrCoded(404, "node not found")
	}
	_, idx, err := s.srv.raftApply(structs.ServiceRegistrationUpsertRequestType,
		&structs.ServiceRegistrationUpsertRequest{Services: args.Services, WriteRequest: args.WriteRequest})
	if err != nil {
		return err
	}
	reply.Index = idx
	return nil
}

// DeleteByAlloc removes the registrations of allocations their node
// stopped (the node sends it before killing their tasks).
func (s *ServiceRegistration) DeleteByAlloc(args *structs.ServiceRegistrationDeleteByAllocRequest, reply *structs.GenericResponse) error {
	if done, err := s.srv.forward("ServiceRegistration.DeleteByAlloc", args.Region, false, args, reply); done {
		return err
	}
	if len(args.AllocIDs) == 0 {
		return structs.NewErrCoded(400, "must specify at least one allocation")
	}
	st := s.srv.State()
	var ids []string
	for _, id := range args.AllocIDs {
		regs, err := st.ServiceRegistrationsByAlloc(nil, id)
		if err != nil {
			return err
		}
		if len(regs) > 0 && (args.NodeID == "" || regs[0].NodeID == args.NodeID) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		reply.Index = maxIndex(st, "service_registrations")
		return nil
	}
	_, idx, err := s.srv.raftApply(structs.ServiceRegistrationDeleteByAllocRequestType,
		&structs.ServiceRegistrationDeleteByAllocRequest{NodeID: args.NodeID, AllocIDs: ids, WriteRequest: args.WriteRequest})
	if err != nil {
		return err
	}
	reply.Index = idx
	return nil
}

// DeleteByID removes one registration of the request's namespace; an
// unknown one is 404.
func (s *ServiceRegistration) DeleteByID(args *structs.ServiceRegistrationDeleteByIDRequest, reply *structs.GenericResponse) error {
	if done, err := s.srv.forward("ServiceRegistration.DeleteByID", args.Region, false, args, reply); done {
		return err
	}
	if args.ID == "" {
		return structs.NewErrCoded(400, "missing service registration ID")
	}
	args.Namespace = namespaceOf(args.Namespace)
	r, err := s.srv.State().ServiceRegistrationByID(nil, args.ID)
	if err != nil {
		return err
	}
	if r == nil || r.Namespace != args.Namespace {
		return structs.NewErrCoded(404, "service registration not found")
	}
	_, idx, err := s.srv.raftApply(structs.ServiceRegistrationDeleteByIDRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = idx
	return nil
}

// List returns the services of a namespace ("*": every readable one), one
// stub per namespace with each service's name and its de-duplicated tags,
// sorted by namespace and name.
func (s *ServiceRegistration) List(args *structs.ServiceRegistrationListRequest, reply *structs.ServiceRegistrationListResponse) error {
	if done, err := s.srv.forward("ServiceRegistration.List", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	readable, err := s.srv.listNamespaces(&args.QueryOptions)
	if err != nil {
		return err
	}
	filter, err := compileFilter(args.Filter)
	if err != nil {
		return err
	}
	return s.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		iter, err := st.ServiceRegistrations(ws)
		if err != nil {
			return err
		}
		var regs []*structs.ServiceRegistration
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			r := raw.(*structs.ServiceRegistration)
			if ns != "*" && r.Namespace != ns {
				continue
			}
			if ok, err := filter.match(r); err != nil {
				return err
			} else if !ok {
				continue
			}
			regs = append(regs, r)
		}
		regs = onlyReadable(regs, readable, func(r *structs.ServiceRegistration) string { return r.Namespace })
		reply.Services = serviceStubs(regs)
		reply.Index = max(maxIndex(st, "service_registrations"), 1)
		return nil
	})
}

// serviceStubs groups registrations per namespace and service name.
func serviceStubs(regs []*structs.ServiceRegistration) []*structs.ServiceRegistrationListStub {
	type key struct{ ns, name string }
	tags := map[key]map[string]bool{}
	for _, r := range regs {
		k := key{r.Namespace, r.ServiceName}
		if tags[k] == nil {
			tags[k] = map[string]bool{}
		}
		for _, t := range r.Tags {
			tags[k][t] = true
		}
	}
	keys := make([]key, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].ns != keys[j].ns {
			return keys[i].ns < keys[j].ns
		}
		return keys[i].name < keys[j].name
	})
	out := []*structs.ServiceRegistrationListStub{}
	for _, k := range keys {
		if len(out) == 0 || out[len(out)-1].Namespace != k.ns {
			out = append(out, &structs.ServiceRegistrationListStub{Namespace: k.ns, Services: []*structs.ServiceRegistrationStub{}})
		}
		ts := make([]string, 0, len(tags[k]))
		for t := range tags[k] {
			ts = append(ts, t)
		}
		sort.Strings(ts)
		last := out[len(out)-1]
		last.Services = append(last.Services, &structs.ServiceRegistrationStub{ServiceName: k.name, Tags: ts})
	}
	return out
}

// GetService returns the registrations of one service in the request's
// namespace (none: an empty list), filtered, then narrowed by Choose.
func (s *ServiceRegistration) GetService(args *structs.ServiceRegistrationByNameRequest, reply *structs.ServiceRegistrationByNameResponse) error {
	if done, err := s.srv.forward("ServiceRegistration.GetService", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	n, key, err := parseChoose(args.Choose)
	if err != nil {
		return err
	}
	filter, err := compileFilter(args.Filter)
	if err != nil {
		return err
	}
	ns := namespaceOf(args.Namespace)
	return s.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		regs, err := st.ServiceRegistrationsByName(ws, ns, args.ServiceName)
		if err != nil {
			return err
		}
		out := make([]*structs.ServiceRegistration, 0, len(regs))
		for _, r := range regs {
			if ok, err := filter.match(r); err != nil {
				return err
			} else if ok {
				out = append(out, r)
			}
		}
		if args.Choose != "" {
			out = chooseServices(out, n, key)
		}
		reply.Services = out
		reply.Index = max(maxIndex(st, "service_registrations"), 1)
		return nil
	})
}

// ByJob returns the registrations of a job's allocations (404 for an
// unknown job), as /v1/job/<id>/services serves them.
func (s *ServiceRegistration) ByJob(args *structs.JobSpecificRequest, reply *structs.ServiceRegistrationByNameResponse) error {
	if done, err := s.srv.forward("ServiceRegistration.ByJob", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	return s.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		job, err := st.JobByID(ws, ns, args.JobID)
		if err != nil {
			return err
		}
		if job == nil {
			return structs.NewErrCoded(404, "job not found")
		}
		regs, err := st.ServiceRegistrationsByJob(ws, ns, args.JobID)
		if err != nil {
			return err
		}
		reply.Services = regs
		reply.Index = max(maxIndex(st, "service_registrations"), 1)
		return nil
	})
}

// ByAlloc returns an allocation's registrations (404 for an unknown
// allocation), as /v1/allocation/<id>/services serves them.
func (s *ServiceRegistration) ByAlloc(args *structs.AllocSpecificRequest, reply *structs.ServiceRegistrationByNameResponse) error {
	if done, err := s.srv.forward("ServiceRegistration.ByAlloc", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	return s.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		a, err := st.AllocByID(ws, args.AllocID)
		if err != nil {
			return err
		}
		if a == nil {
			return structs.NewErrCoded(404, "alloc not found")
		}
		regs, err := st.ServiceRegistrationsByAlloc(ws, args.AllocID)
		if err != nil {
			return err
		}
		reply.Services = regs
		reply.Index = max(maxIndex(st, "service_registrations"), 1)
		return nil
	})
}

// parseChoose reads "<n>|<key>".
func parseChoose(choose string) (int, string, error) {
	if choose == "" {
		return 0, "", nil
	}
	num, key, ok := strings.Cut(choose, "|")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 0 {
		return 0, "", structs.NewErrCoded(400, "invalid choose parameter %q: want <number>|<key>", choose)
	}
	return n, key, nil
}

// chooseServices picks n registrations by rendezvous hashing: each is
// ranked by sha256(key + ID), so every caller with the same key gets the
// same subset, and a registration coming or going moves few callers.
func chooseServices(regs []*structs.ServiceRegistration, n int, key string) []*structs.ServiceRegistration {
	type ranked struct {
		rank string
		r    *structs.ServiceRegistration
	}
	rs := make([]ranked, len(regs))
	for i, r := range regs {
		h := sha256.Sum256([]byte(key + r.ID))
		rs[i] = ranked{hex.EncodeToString(h[:]), r}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].rank < rs[j].rank })
	n = min(n, len(rs))
	out := make([]*structs.ServiceRegistration, n)
	for i := range out {
		out[i] = rs[i].r
	}
	return out
}
