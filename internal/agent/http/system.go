package httpapi

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/system/gc: PUT forces a garbage collection of everything eligible,
// thresholds ignored; it answers once the collection is committed.
func (s *server) systemGCRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodPut && r.Method != http.MethodPost {
		return nil, errInvalidMethod
	}
	var args structs.SystemGCRequest
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.SystemGCResponse
	if err := s.cfg.RPC.RPC("System.GarbageCollect", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}

// /v1/system/reconcile/summaries: PUT recounts every job summary.
func (s *server) systemReconcileSummariesRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodPut && r.Method != http.MethodPost {
		return nil, errInvalidMethod
	}
	var args structs.ReconcileJobSummariesRequest
	s.parseWrite(r, &args.WriteRequest)
	var reply structs.GenericResponse
	if err := s.cfg.RPC.RPC("System.ReconcileJobSummaries", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}

// /v1/evaluations/count: GET counts evaluations (prefix, filter and
// namespace as for the list); a blocking query.
func (s *server) evalsCountRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	var args structs.EvalCountRequest
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.EvalCountResponse
	if err := s.cfg.RPC.RPC("Eval.Count", &args, &reply); err != nil {
		return nil, err
	}
	setMeta(w, &reply.QueryMeta)
	return &api.EvalCountResponse{Count: reply.Count, QueryMeta: api.QueryMeta{LastIndex: reply.Index,
		KnownLeader: reply.KnownLeader}}, nil
}
