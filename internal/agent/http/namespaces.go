package httpapi

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/namespaces: list namespaces.
func (s *server) namespacesRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.GenericRequest{}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.NamespaceListResponse
	if err := s.cfg.RPC.RPC("Namespace.ListNamespaces", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	return nonNil(reply.Namespaces), nil
}

// /v1/namespace: create or update the namespace the body names.
func (s *server) namespaceCreateRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	return s.namespaceUpsert(w, r, "")
}

// /v1/namespace/<name>: read (GET), create or update (PUT/POST), delete
// (DELETE) one namespace.
func (s *server) namespaceSpecificRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/namespace/")
	if err != nil {
		return nil, err
	}
	if len(parts) != 1 || parts[0] == "" {
		if len(parts) == 0 || parts[0] == "" {
			return nil, structs.NewErrCoded(400, "Missing namespace name")
		}
		return nil, errNotFound
	}
	name := parts[0]
	switch {
	case r.Method == http.MethodGet:
	case isWrite(r.Method):
		return s.namespaceUpsert(w, r, name)
	case r.Method == http.MethodDelete:
		args := structs.NamespaceDeleteRequest{Namespaces: []string{name}}
		s.parseWrite(r, &args.WriteRequest)
		var reply structs.GenericResponse
		if err := s.cfg.RPC.RPC("Namespace.DeleteNamespaces", &args, &reply); err != nil {
			return nil, err
		}
		setIndex(w, reply.Index)
		return nil, nil
	default:
		return nil, errInvalidMethod
	}
	args := structs.NamespaceSpecificRequest{Name: name}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.SingleNamespaceResponse
	if err := s.cfg.RPC.RPC("Namespace.GetNamespace", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	if reply.Namespace == nil {
		return nil, structs.NewErrCoded(404, "namespace not found")
	}
	return reply.Namespace, nil
}

// namespaceUpsert decodes an api.Namespace body; a name in the path must
// match the body's (an empty body name takes the path's).
func (s *server) namespaceUpsert(w http.ResponseWriter, r *http.Request, pathName string) (any, error) {
	var in api.Namespace
	if err := decodeBody(r, &in, false); err != nil {
		return nil, err
	}
	if in.Name == "" {
		in.Name = pathName
	}
	if pathName != "" && in.Name != pathName {
		return nil, structs.NewErrCoded(400, "Namespace name %q does not match the request path %q", in.Name, pathName)
	}
	args := structs.NamespaceUpsertRequest{Namespaces: []*structs.Namespace{namespaceFromAPI(&in)}}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.GenericResponse
	if err := s.cfg.RPC.RPC("Namespace.UpsertNamespaces", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}

func namespaceFromAPI(in *api.Namespace) *structs.Namespace {
	ns := &structs.Namespace{Name: in.Name, Description: in.Description, Quota: in.Quota, Meta: in.Meta}
	if c := in.Capabilities; c != nil {
		ns.Capabilities = &structs.NamespaceCapabilities{
			EnabledTaskDrivers:   c.EnabledTaskDrivers,
			DisabledTaskDrivers:  c.DisabledTaskDrivers,
			EnabledNetworkModes:  c.EnabledNetworkModes,
			DisabledNetworkModes: c.DisabledNetworkModes,
		}
	}
	if c := in.NodePoolConfiguration; c != nil {
		ns.NodePoolConfiguration = &structs.NamespaceNodePoolConfiguration{Default: c.Default, Allowed: c.Allowed, Denied: c.Denied}
	}
	return ns
}
