package httpapi

import (
	"net/http"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/operator/raft/configuration: the Raft servers, the leader and the
// voters (nomad operator raft list-peers).
func (s *server) operatorRaftConfigurationRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.GenericRequest{}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.RaftConfigurationResponse
	if err := s.cfg.RPC.RPC("Operator.RaftGetConfiguration", &args, &reply); err != nil {
		return nil, err
	}
	if reply.Servers == nil {
		reply.Servers = []*structs.RaftServer{}
	}
	return &reply, nil
}

// /v1/operator/raft/peer?id=|address=: DELETE removes a server from the
// Raft configuration (nomad operator raft remove-peer).
func (s *server) operatorRaftPeerRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodDelete {
		return nil, errInvalidMethod
	}
	q := r.URL.Query()
	args := structs.RaftPeerRequest{ID: q.Get("id"), Address: q.Get("address")}
	s.parseWrite(r, &args.WriteRequest)
	if (args.ID == "") == (args.Address == "") {
		return nil, structs.NewErrCoded(400, "Must specify either ?id with the server's ID or ?address with IP:port of peer to remove")
	}
	method := "Operator.RaftRemovePeerByID"
	if args.Address != "" {
		method = "Operator.RaftRemovePeerByAddress"
	}
	var reply struct{}
	if err := s.cfg.RPC.RPC(method, &args, &reply); err != nil {
		return nil, err
	}
	return nil, nil
}
