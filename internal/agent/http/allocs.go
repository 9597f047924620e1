package httpapi

import (
	"net/http"
	"net/url"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/allocations: list allocation stubs (task_states=false drops task states).
func (s *server) allocsRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.AllocListRequest{}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	resources, err := boolParam(r, "resources", false)
	if err != nil {
		return nil, err
	}
	args.Resources = resources
	taskStates, err := boolParam(r, "task_states", true)
	if err != nil {
		return nil, err
	}
	var reply structs.AllocListResponse
	if err := s.cfg.RPC.RPC("Alloc.List", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	allocs := nonNil(reply.Allocations)
	if !taskStates {
		// Copy: an in-process reply may share objects with the state store.
		out := make([]*structs.AllocListStub, len(allocs))
		for i, a := range allocs {
			c := *a
			c.TaskStates = nil
			out[i] = &c
		}
		allocs = out
	}
	return allocs, nil
}

// /v1/allocation/<id>, /v1/allocation/<id>/stop, /checks (relayed to its
// node) and /services (its Nomad-native service registrations).
func (s *server) allocSpecificRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/allocation/")
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 || parts[0] == "" {
		return nil, structs.NewErrCoded(400, "Missing allocation ID")
	}
	id := parts[0]
	switch {
	case len(parts) == 1:
		if r.Method != http.MethodGet {
			return nil, errInvalidMethod
		}
		return s.allocGet(w, r, id)
	case len(parts) == 2 && parts[1] == "checks":
		// Nomad's server-side route to the node's checks.
		if r.Method != http.MethodGet {
			return nil, errInvalidMethod
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = "/v1/client/allocation/"+url.PathEscape(id)+"/checks", ""
		return s.onAllocNode("/v1/client/allocation/", s.clientAllocRequest)(w, r2)
	case len(parts) == 2 && parts[1] == "services":
		if r.Method != http.MethodGet {
			return nil, errInvalidMethod
		}
		args := structs.AllocSpecificRequest{AllocID: id}
		if err := s.parseQuery(r, &args.QueryOptions); err != nil {
			return nil, err
		}
		var reply structs.ServiceRegistrationByNameResponse
		if err := s.cfg.RPC.RPC("ServiceRegistration.ByAlloc", &args, &reply); err != nil {
			return nil, err
		}
		setMeta(w, &reply.QueryMeta)
		return nonNil(reply.Services), nil
	case len(parts) == 2 && parts[1] == "stop":
		if !isWrite(r.Method) {
			return nil, errInvalidMethod
		}
		return s.allocStop(w, r, id)
	}
	return nil, errNotFound
}

func (s *server) allocGet(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	args := structs.AllocSpecificRequest{AllocID: id}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.SingleAllocResponse
	if err := s.cfg.RPC.RPC("Alloc.GetAlloc", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	if reply.Alloc == nil {
		return nil, structs.NewErrCoded(404, "alloc not found")
	}
	return reply.Alloc, nil
}

func (s *server) allocStop(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	args := structs.AllocStopRequest{AllocID: id}
	s.parseWrite(r, &args.WriteRequest)
	var err error
	if args.NoShutdownDelay, err = boolParam(r, "no_shutdown_delay", false); err != nil {
		return nil, err
	}
	var reply structs.AllocStopResponse
	if err := s.cfg.RPC.RPC("Alloc.Stop", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return &reply, nil
}
