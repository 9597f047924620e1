package httpapi

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/evaluations: GET lists evaluations (job and status filters);
// DELETE deletes some, by ID or filter, while the eval broker is paused.
func (s *server) evalsRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method == http.MethodDelete {
		return s.evalsDelete(w, r)
	}
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.EvalListRequest{
		FilterJobID:      r.URL.Query().Get("job"),
		FilterEvalStatus: r.URL.Query().Get("status"),
	}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.EvalListResponse
	if err := s.cfg.RPC.RPC("Eval.List", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	return nonNil(reply.Evaluations), nil
}

// /v1/evaluation/<id> and /v1/evaluation/<id>/allocations
func (s *server) evalSpecificRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/evaluation/")
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 || parts[0] == "" {
		return nil, structs.NewErrCoded(400, "Missing evaluation ID")
	}
	if len(parts) > 2 || (len(parts) == 2 && parts[1] != "allocations") {
		return nil, errNotFound
	}
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.EvalSpecificRequest{EvalID: parts[0]}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	related, err := boolParam(r, "related", false)
	if err != nil {
		return nil, err
	}
	args.IncludeRelated = related
	if len(parts) == 2 {
		var reply structs.EvalAllocationsResponse
		if err := s.cfg.RPC.RPC("Eval.Allocations", &args, &reply); err != nil {
			return nil, err
		}
		setMeta(w, &reply.QueryMeta)
		return nonNil(reply.Allocations), nil
	}
	var reply structs.SingleEvalResponse
	if err := s.cfg.RPC.RPC("Eval.GetEval", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	if reply.Eval == nil {
		return nil, structs.ErrUnknownEvaluation
	}
	return reply.Eval, nil
}

// evalsDelete is DELETE /v1/evaluations with a body of EvalIDs or Filter.
func (s *server) evalsDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	var body api.EvalDeleteRequest
	if err := decodeBody(r, &body, false); err != nil {
		return nil, err
	}
	args := structs.EvalOperatorDeleteRequest{EvalIDs: body.EvalIDs, Filter: body.Filter}
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.EvalOperatorDeleteResponse
	if err := s.cfg.RPC.RPC("Eval.Delete", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return &api.EvalDeleteResponse{Count: reply.Count}, nil
}
