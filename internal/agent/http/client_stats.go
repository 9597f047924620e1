package httpapi

import (
	"net/http"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/client/stats[?node_id=]: the local client's host sample (memory, CPU
// per core, disks, the alloc dir's disk, uptime). A node_id naming another
// node is refused rather than forwarded: this agent can only describe its
// own host.
func (s *server) clientStatsRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	if s.cfg.Stats == nil {
		return nil, errNoClient
	}
	if err := s.localNode(r.URL.Query().Get("node_id"), "stats"); err != nil {
		return nil, err
	}
	return s.cfg.Stats.HostStats()
}

// localNode accepts an empty node ID or this agent's client node: a
// request about another node reaches here only when it cannot be relayed
// (no path), and is refused, saying to ask that node's agent for what.
func (s *server) localNode(id, what string) error {
	if id == "" {
		return nil
	}
	var local string
	switch {
	case s.cfg.Stats != nil:
		local = s.cfg.Stats.NodeID()
	case s.cfg.NodeMeta != nil:
		local = s.cfg.NodeMeta.NodeID()
	case s.cfg.Identity != nil:
		local = s.cfg.Identity.NodeID()
	default:
		return structs.NewErrCoded(http.StatusBadRequest, "node_id %q is not this agent's client (it runs none): ask that node's agent for its %s", id, what)
	}
	if id != local {
		return structs.NewErrCoded(http.StatusBadRequest, "node_id %q is not this agent's client (%s): ask that node's agent for its %s", id, local, what)
	}
	return nil
}
