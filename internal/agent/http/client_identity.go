package httpapi

import (
	"net/http"

	"github.com/hashicorp/nomad/api"
)

// /v1/client/identity[?node_id=]: the claims of the local client's node
// identity (the JWT the servers signed for it), as api.NodeIdentityGetResponse.
// A node ID naming another node is relayed there (onQueryNode).
func (s *server) clientIdentityRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	if s.cfg.Identity == nil {
		return nil, errNoClient
	}
	if err := s.localNode(r.URL.Query().Get("node_id"), "identity"); err != nil {
		return nil, err
	}
	claims, err := s.cfg.Identity.NodeIdentityClaims()
	if err != nil {
		return nil, err
	}
	return &api.NodeIdentityGetResponse{Claims: claims}, nil
}

// PUT|POST /v1/client/identity/renew with an api.NodeIdentityRenewRequest
// (or ?node_id=): the node asks the servers for a new identity at its next
// heartbeat.
func (s *server) clientIdentityRenewRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodPut && r.Method != http.MethodPost {
		return nil, errInvalidMethod
	}
	if s.cfg.Identity == nil {
		return nil, errNoClient
	}
	var req api.NodeIdentityRenewRequest
	if err := decodeBody(r, &req, true); err != nil {
		return nil, err
	}
	id := req.NodeID
	if id == "" {
		id = r.URL.Query().Get("node_id")
	}
	if err := s.localNode(id, "identity"); err != nil {
		return nil, err
	}
	s.cfg.Identity.RenewNodeIdentity()
	return &api.NodeIdentityRenewResponse{}, nil
}
