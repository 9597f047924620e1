package httpapi

import (
	"net/http"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/scaling/policies[?job=&type=]: the scaling policies of a namespace.
func (s *server) scalingPoliciesRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	q := r.URL.Query()
	args := structs.ScalingPolicyListRequest{Job: q.Get("job"), Type: q.Get("type")}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.ScalingPolicyListResponse
	if err := s.cfg.RPC.RPC("Scaling.ListPolicies", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	return nonNil(reply.Policies), nil
}

// /v1/scaling/policy/<id>: one scaling policy; an unknown or empty ID is 404.
func (s *server) scalingPolicyRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/scaling/policy/")
	if err != nil {
		return nil, err
	}
	if len(parts) != 1 || parts[0] == "" {
		return nil, errNotFound
	}
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.ScalingPolicySpecificRequest{ID: parts[0]}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.SingleScalingPolicyResponse
	if err := s.cfg.RPC.RPC("Scaling.GetPolicy", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	if reply.Policy == nil {
		return nil, structs.NewErrCoded(404, "scaling policy not found")
	}
	return reply.Policy, nil
}
