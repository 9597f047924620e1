package httpapi

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/nodes: list node stubs (resources=true, os=true).
func (s *server) nodesRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.NodeListRequest{}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var err error
	if args.Resources, err = boolParam(r, "resources", false); err != nil {
		return nil, err
	}
	if args.OS, err = boolParam(r, "os", false); err != nil {
		return nil, err
	}
	var reply structs.NodeListResponse
	if err := s.cfg.RPC.RPC("Node.List", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	return nonNil(reply.Nodes), nil
}

// /v1/node/<id>, /v1/node/<id>/allocations, /v1/node/<id>/eligibility, /v1/node/<id>/drain
func (s *server) nodeSpecificRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/node/")
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 || parts[0] == "" {
		return nil, structs.NewErrCoded(400, "Missing node ID")
	}
	id := parts[0]
	switch {
	case len(parts) == 1:
		if r.Method != http.MethodGet {
			return nil, errInvalidMethod
		}
		args := structs.NodeSpecificRequest{NodeID: id}
		if err := s.parseQuery(r, &args.QueryOptions); err != nil {
			return nil, err
		}
		var reply structs.SingleNodeResponse
		if err := s.cfg.RPC.RPC("Node.GetNode", &args, &reply); err != nil {
			return nil, err
		}
		setMeta(w, &reply.QueryMeta)
		if reply.Node == nil {
			return nil, structs.NewErrCoded(404, "node not found")
		}
		node := *reply.Node
		node.SecretID = "" // never leaves the cluster, whatever the RPC returned
		return &node, nil
	case len(parts) == 2 && parts[1] == "allocations":
		if r.Method != http.MethodGet {
			return nil, errInvalidMethod
		}
		args := structs.NodeSpecificRequest{NodeID: id}
		if err := s.parseQuery(r, &args.QueryOptions); err != nil {
			return nil, err
		}
		var reply structs.NodeAllocsResponse
		if err := s.cfg.RPC.RPC("Node.GetAllocs", &args, &reply); err != nil {
			return nil, err
		}
		setMeta(w, &reply.QueryMeta)
		return nonNil(reply.Allocs), nil
	case len(parts) == 2 && parts[1] == "evaluate":
		if !isWrite(r.Method) {
			return nil, errInvalidMethod
		}
		args := structs.NodeSpecificRequest{NodeID: id}
		if err := s.parseQuery(r, &args.QueryOptions); err != nil {
			return nil, err
		}
		var reply structs.NodeUpdateResponse
		if err := s.cfg.RPC.RPC("Node.Evaluate", &args, &reply); err != nil {
			return nil, err
		}
		setIndex(w, reply.Index)
		out := map[string]any{"EvalIDs": nonNil(reply.EvalIDs), "EvalCreateIndex": reply.EvalCreateIndex,
			"NodeModifyIndex": reply.NodeModifyIndex, "Index": reply.Index}
		if len(reply.EvalIDs) > 0 {
			out["EvalID"] = reply.EvalIDs[0]
		}
		return out, nil
	case len(parts) == 2 && parts[1] == "purge":
		if !isWrite(r.Method) {
			return nil, errInvalidMethod
		}
		args := structs.NodeDeregisterRequest{NodeIDs: []string{id}}
		s.parseWrite(r, &args.WriteRequest)
		var reply structs.NodeUpdateResponse
		if err := s.cfg.RPC.RPC("Node.Deregister", &args, &reply); err != nil {
			return nil, err
		}
		setIndex(w, reply.Index)
		return map[string]any{"EvalIDs": nonNil(reply.EvalIDs), "EvalCreateIndex": reply.EvalCreateIndex,
			"NodeModifyIndex": reply.NodeModifyIndex, "Index": reply.Index}, nil
	case len(parts) == 2 && parts[1] == "eligibility":
		if !isWrite(r.Method) {
			return nil, errInvalidMethod
		}
		return s.nodeEligibility(w, r, id)
	case len(parts) == 2 && parts[1] == "drain":
		if !isWrite(r.Method) {
			return nil, errInvalidMethod
		}
		return s.nodeDrain(w, r, id)
	}
	return nil, errNotFound
}

// nodeDrain sets, updates or (without DrainSpec) cancels a node's drain.
func (s *server) nodeDrain(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	var body api.NodeUpdateDrainRequest
	if err := decodeBody(r, &body, false); err != nil {
		return nil, err
	}
	if body.NodeID != "" && body.NodeID != id {
		return nil, structs.NewErrCoded(400, "Node ID does not match request path")
	}
	args := structs.NodeUpdateDrainRequest{NodeID: id, DrainSpec: body.DrainSpec, MarkEligible: body.MarkEligible, Meta: body.Meta}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.NodeDrainUpdateResponse
	if err := s.cfg.RPC.RPC("Node.UpdateDrain", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	reply.EvalIDs = nonNil(reply.EvalIDs)
	return &reply, nil
}

func (s *server) nodeEligibility(w http.ResponseWriter, r *http.Request, id string) (any, error) {
	var body api.NodeUpdateEligibilityRequest
	if err := decodeBody(r, &body, false); err != nil {
		return nil, err
	}
	if body.NodeID != "" && body.NodeID != id {
		return nil, structs.NewErrCoded(400, "Node ID does not match request path")
	}
	switch body.Eligibility {
	case structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible:
	default:
		return nil, structs.NewErrCoded(400, "Invalid eligibility %q: must be %q or %q",
			body.Eligibility, structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible)
	}
	args := structs.NodeUpdateEligibilityRequest{NodeID: id, Eligibility: body.Eligibility}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.NodeEligibilityUpdateResponse
	if err := s.cfg.RPC.RPC("Node.UpdateEligibility", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	reply.EvalIDs = nonNil(reply.EvalIDs)
	return &reply, nil
}
