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
	if id := r.URL.Query().Get("node_id"); id != "" && id != s.cfg.Stats.NodeID() {
		return nil, structs.NewErrCoded(http.StatusBadRequest,
			"node_id %q is not this agent's client (%s): ask that node's agent for its stats", id, s.cfg.Stats.NodeID())
	}
	return s.cfg.Stats.HostStats()
}
