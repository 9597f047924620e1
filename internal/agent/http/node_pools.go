package httpapi

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/node/pools: list (GET) or create/update (PUT/POST) node pools.
func (s *server) nodePoolsRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	switch {
	case r.Method == http.MethodGet:
	case isWrite(r.Method):
		return s.nodePoolUpsert(w, r, "")
	default:
		return nil, errInvalidMethod
	}
	args := structs.GenericRequest{}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.NodePoolListResponse
	if err := s.cfg.RPC.RPC("NodePool.List", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	out := make([]*api.NodePool, 0, len(reply.NodePools))
	for _, p := range reply.NodePools {
		out = append(out, nodePoolToAPI(p))
	}
	return out, nil
}

// /v1/node/pool/<name>[/nodes|/jobs]: one pool: read (GET), update
// (PUT/POST), delete (DELETE); its nodes; its jobs.
func (s *server) nodePoolSpecificRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/node/pool/")
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 || parts[0] == "" {
		return nil, structs.NewErrCoded(400, "missing node pool name")
	}
	name := parts[0]
	switch {
	case len(parts) == 1:
		return s.nodePoolRequest(w, r, name)
	case len(parts) == 2 && parts[1] == "nodes":
		if r.Method != http.MethodGet {
			return nil, errInvalidMethod
		}
		args := structs.NodePoolSpecificRequest{Name: name}
		if err := s.parseQuery(r, &args.QueryOptions); err != nil {
			return nil, err
		}
		var reply structs.NodePoolNodesResponse
		if err := s.cfg.RPC.RPC("NodePool.ListNodes", &args, &reply); err != nil {
			return nil, err
		}
		setMeta(w, &reply.QueryMeta)
		return nonNil(reply.Nodes), nil
	case len(parts) == 2 && parts[1] == "jobs":
		if r.Method != http.MethodGet {
			return nil, errInvalidMethod
		}
		args := structs.NodePoolSpecificRequest{Name: name}
		if err := s.parseQuery(r, &args.QueryOptions); err != nil {
			return nil, err
		}
		var reply structs.NodePoolJobsResponse
		if err := s.cfg.RPC.RPC("NodePool.ListJobs", &args, &reply); err != nil {
			return nil, err
		}
		setMeta(w, &reply.QueryMeta)
		return nonNil(reply.Jobs), nil
	}
	return nil, errNotFound
}

func (s *server) nodePoolRequest(w http.ResponseWriter, r *http.Request, name string) (any, error) {
	switch {
	case r.Method == http.MethodGet:
	case isWrite(r.Method):
		return s.nodePoolUpsert(w, r, name)
	case r.Method == http.MethodDelete:
		args := structs.NodePoolDeleteRequest{Names: []string{name}}
		s.parseWrite(r, &args.WriteRequest)
		var reply structs.GenericResponse
		if err := s.cfg.RPC.RPC("NodePool.DeleteNodePools", &args, &reply); err != nil {
			return nil, err
		}
		setIndex(w, reply.Index)
		return nil, nil
	default:
		return nil, errInvalidMethod
	}
	args := structs.NodePoolSpecificRequest{Name: name}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.SingleNodePoolResponse
	if err := s.cfg.RPC.RPC("NodePool.GetNodePool", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	if reply.NodePool == nil {
		return nil, structs.NewErrCoded(404, "node pool not found")
	}
	return nodePoolToAPI(reply.NodePool), nil
}

// nodePoolUpsert decodes an api.NodePool body; a name in the path must
// match the body's (an empty body name takes the path's).
func (s *server) nodePoolUpsert(w http.ResponseWriter, r *http.Request, pathName string) (any, error) {
	var in api.NodePool
	if err := decodeBody(r, &in, false); err != nil {
		return nil, err
	}
	if in.Name == "" {
		in.Name = pathName
	}
	if in.Name == "" {
		return nil, structs.NewErrCoded(400, "missing node pool name")
	}
	if pathName != "" && in.Name != pathName {
		return nil, structs.NewErrCoded(400, "node pool name %q does not match the request path %q", in.Name, pathName)
	}
	args := structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{nodePoolFromAPI(&in)}}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.GenericResponse
	if err := s.cfg.RPC.RPC("NodePool.UpsertNodePools", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}

func nodePoolFromAPI(in *api.NodePool) *structs.NodePool {
	p := &structs.NodePool{Name: in.Name, Description: in.Description, Meta: in.Meta, NodeIdentityTTL: in.NodeIdentityTTL}
	if sc := in.SchedulerConfiguration; sc != nil {
		p.SchedulerConfiguration = &structs.NodePoolSchedulerConfiguration{
			SchedulerAlgorithm:            string(sc.SchedulerAlgorithm),
			MemoryOversubscriptionEnabled: sc.MemoryOversubscriptionEnabled,
		}
	}
	return p
}

func nodePoolToAPI(p *structs.NodePool) *api.NodePool {
	out := &api.NodePool{Name: p.Name, Description: p.Description, Meta: p.Meta, NodeIdentityTTL: p.NodeIdentityTTL,
		CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex}
	if sc := p.SchedulerConfiguration; sc != nil {
		out.SchedulerConfiguration = &api.NodePoolSchedulerConfiguration{
			SchedulerAlgorithm:            api.SchedulerAlgorithm(sc.SchedulerAlgorithm),
			MemoryOversubscriptionEnabled: sc.MemoryOversubscriptionEnabled,
		}
	}
	return out
}
