package httpapi

import (
	"net/http"

	"github.com/hashicorp/nomad/api"
)

// ClientAllocStats samples the local client's allocations. It may be nil
// when the agent runs no client.
type ClientAllocStats interface {
	AllocStats(allocID string) (*api.AllocResourceUsage, error)
}

// /v1/client/allocation/<alloc>/exec (exec.go), /gc (client_gc.go) and
// /stats: the running tasks' usage, from the drivers that report it. Every
// other path under /v1/client/allocation/ answers 404.
func (s *server) clientAllocRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/client/allocation/")
	if err != nil {
		return nil, err
	}
	if len(parts) != 2 || parts[0] == "" || (parts[1] != "exec" && parts[1] != "stats" && parts[1] != "gc") {
		return nil, errNotFound
	}
	if parts[1] == "gc" {
		return s.allocGCRequest(w, r, parts[0])
	}
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	if parts[1] == "exec" {
		return s.allocExecRequest(w, r, parts[0])
	}
	if s.cfg.AllocStats == nil {
		return nil, s.execElsewhere(parts[0], true)
	}
	u, err := s.cfg.AllocStats.AllocStats(parts[0])
	if isNotFound(err) {
		err = s.execElsewhere(parts[0], false)
	}
	return u, err
}
