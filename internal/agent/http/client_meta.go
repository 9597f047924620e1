package httpapi

import (
	"net/http"

	"github.com/hashicorp/nomad/api"
)

// /v1/client/metadata: the local client's node meta. GET[?node_id=] reads
// it (merged, dynamic and static); PUT/POST with an api.NodeMetaApplyRequest
// sets keys (string values) and unsets them (null), persists the change and
// answers once the servers hold the updated node. A node ID naming another
// node is relayed there (onQueryNode).
func (s *server) clientMetadataRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	switch r.Method {
	case http.MethodGet:
		if s.cfg.NodeMeta == nil {
			return nil, errNoClient
		}
		if err := s.localNode(r.URL.Query().Get("node_id"), "metadata"); err != nil {
			return nil, err
		}
		return s.cfg.NodeMeta.NodeMeta(), nil
	case http.MethodPut, http.MethodPost:
		if s.cfg.NodeMeta == nil {
			return nil, errNoClient
		}
		var req api.NodeMetaApplyRequest
		if err := decodeBody(r, &req, false); err != nil {
			return nil, err
		}
		id := req.NodeID
		if id == "" {
			id = r.URL.Query().Get("node_id")
		}
		if err := s.localNode(id, "metadata"); err != nil {
			return nil, err
		}
		return s.cfg.NodeMeta.ApplyNodeMeta(req.Meta)
	default:
		return nil, errInvalidMethod
	}
}
