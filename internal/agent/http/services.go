package httpapi

import (
	"net/http"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/services: the Nomad-native services of a namespace ("*": all), one
// stub per namespace.
func (s *server) servicesRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	var args structs.ServiceRegistrationListRequest
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.ServiceRegistrationListResponse
	if err := s.cfg.RPC.RPC("ServiceRegistration.List", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	return nonNil(reply.Services), nil
}

// /v1/service/<name> (GET: its registrations, ?choose=<n>|<key>, ?filter=)
// and /v1/service/<name>/<id> (DELETE one registration).
func (s *server) serviceRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/service/")
	if err != nil {
		return nil, err
	}
	switch {
	case len(parts) == 1 && parts[0] != "":
		if r.Method != http.MethodGet {
			return nil, errInvalidMethod
		}
		args := structs.ServiceRegistrationByNameRequest{ServiceName: parts[0], Choose: r.URL.Query().Get("choose")}
		if err := s.parseQuery(r, &args.QueryOptions); err != nil {
			return nil, err
		}
		var reply structs.ServiceRegistrationByNameResponse
		if err := s.cfg.RPC.RPC("ServiceRegistration.GetService", &args, &reply); err != nil {
			return nil, err
		}
		setMeta(w, &reply.QueryMeta)
		return nonNil(reply.Services), nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		if r.Method != http.MethodDelete {
			return nil, errInvalidMethod
		}
		args := structs.ServiceRegistrationDeleteByIDRequest{ID: parts[1]}
		s.parseWrite(r, &args.WriteRequest)
		var reply structs.GenericResponse
		if err := s.cfg.RPC.RPC("ServiceRegistration.DeleteByID", &args, &reply); err != nil {
			return nil, err
		}
		setIndex(w, reply.Index)
		return nil, nil
	}
	return nil, errNotFound
}
