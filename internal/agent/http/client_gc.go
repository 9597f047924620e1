package httpapi

import (
	"net/http"

	"github.com/drover-project/drover/internal/structs"
)

// ClientGC is the local client's garbage collection of finished
// allocations. It may be nil when the agent runs no client.
type ClientGC interface {
	NodeID() string
	// CollectAll destroys every finished allocation and returns how many.
	CollectAll() int
	// CollectAlloc destroys one finished allocation (coded 404 / 400).
	CollectAlloc(allocID string) error
}

// /v1/client/gc[?node_id=]: destroys every finished allocation of this
// agent's client (runners and alloc dirs). A node_id naming another node is
// relayed there (onQueryNode).
func (s *server) clientGCRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	switch r.Method {
	case http.MethodGet, http.MethodPut, http.MethodPost:
	default:
		return nil, errInvalidMethod
	}
	if s.cfg.GC == nil {
		return nil, errNoClient
	}
	if id := r.URL.Query().Get("node_id"); id != "" && id != s.cfg.GC.NodeID() {
		return nil, structs.NewErrCoded(http.StatusBadRequest, "node_id %q is not this agent's client (%s): ask that node's agent to collect", id, s.cfg.GC.NodeID())
	}
	s.cfg.GC.CollectAll()
	return nil, nil
}

// /v1/client/allocation/<id>/gc: destroys one finished allocation of this
// agent's client (dispatched by clientAllocRequest).
func (s *server) allocGCRequest(w http.ResponseWriter, r *http.Request, allocID string) (any, error) {
	switch r.Method {
	case http.MethodGet, http.MethodPut, http.MethodPost:
	default:
		return nil, errInvalidMethod
	}
	if s.cfg.GC == nil {
		return nil, errNoClient
	}
	// An empty body, as Nomad's: Nodes().GcAlloc reads none. (The official
	// client's Allocations().GC expects a body on the same path, so it
	// reports an error after a successful collection, against Nomad too.)
	return nil, s.cfg.GC.CollectAlloc(allocID)
}
