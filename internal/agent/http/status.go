package httpapi

import (
	"net/http"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/status/leader: the leader's RPC address as a JSON string.
func (s *server) statusLeaderRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.GenericRequest{}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var leader string
	if err := s.cfg.RPC.RPC("Status.Leader", &args, &leader); err != nil {
		return nil, err
	}
	// The RPC carries no QueryMeta; the headers still go out so clients that
	// parse them on every read see well-formed values.
	setMeta(w, &structs.QueryMeta{KnownLeader: leader != ""})
	return leader, nil
}

// /v1/status/peers: the Raft peers' addresses.
func (s *server) statusPeersRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	return s.stringListQuery(w, r, "Status.Peers")
}

// /v1/regions: the known regions.
func (s *server) regionsRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	return s.stringListQuery(w, r, "Region.List")
}

func (s *server) stringListQuery(w http.ResponseWriter, r *http.Request, method string) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.GenericRequest{}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var out []string
	if err := s.cfg.RPC.RPC(method, &args, &out); err != nil {
		return nil, err
	}
	setMeta(w, &structs.QueryMeta{KnownLeader: true})
	return nonNil(out), nil
}
