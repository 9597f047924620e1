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

// ClientAllocOps acts on the local client's allocations. It may be nil
// when the agent runs no client.
type ClientAllocOps interface {
	// AllocRestart restarts the task, or every running task (coded 4xx
	// refusals).
	AllocRestart(allocID, task string, allTasks bool) error
	// AllocSignal signals the task, or every running task.
	AllocSignal(allocID, task, signal string) error
}

// ClientAllocChecks reads the local client's service check results. It
// may be nil when the agent runs no client.
type ClientAllocChecks interface {
	AllocChecks(allocID string) (api.AllocCheckStatuses, error)
}

// /v1/client/allocation/<alloc>/exec (exec.go), /gc (client_gc.go),
// /snapshot (client_snapshot.go),
// /stats (the running tasks' usage, from the drivers that report it),
// /restart, /signal and /checks. Every other path under
// /v1/client/allocation/ answers 404. The route runs on the allocation's
// node (onAllocNode).
func (s *server) clientAllocRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	parts, err := pathArgs(r, "/v1/client/allocation/")
	if err != nil {
		return nil, err
	}
	if len(parts) != 2 || parts[0] == "" {
		return nil, errNotFound
	}
	id := parts[1]
	switch id {
	case "gc":
		return s.allocGCRequest(w, r, parts[0])
	case "restart", "signal":
		return s.allocOpRequest(r, parts[0], id)
	case "exec", "stats", "checks", "snapshot":
	default:
		return nil, errNotFound
	}
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	switch id {
	case "exec":
		return s.allocExecRequest(w, r, parts[0])
	case "checks":
		return s.allocChecksRequest(parts[0])
	case "snapshot":
		return s.allocSnapshotRequest(w, r, parts[0])
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

// /v1/client/allocation/<alloc>/restart (api.AllocationRestartRequest)
// and /signal (api.AllocSignalRequest), PUT or POST.
func (s *server) allocOpRequest(r *http.Request, allocID, op string) (any, error) {
	if r.Method != http.MethodPut && r.Method != http.MethodPost {
		return nil, errInvalidMethod
	}
	if s.cfg.AllocOps == nil {
		return nil, s.execElsewhere(allocID, true)
	}
	var err error
	if op == "restart" {
		var req api.AllocationRestartRequest
		if err := decodeBody(r, &req, true); err != nil {
			return nil, err
		}
		err = s.cfg.AllocOps.AllocRestart(allocID, req.TaskName, req.AllTasks)
	} else {
		var req api.AllocSignalRequest
		if err := decodeBody(r, &req, true); err != nil {
			return nil, err
		}
		err = s.cfg.AllocOps.AllocSignal(allocID, req.Task, req.Signal)
	}
	if isNotFound(err) {
		err = s.execElsewhere(allocID, false)
	}
	if err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// /v1/client/allocation/<alloc>/checks: the latest result of each of the
// allocation's nomad-provider service checks, by check ID ({} when it has
// none).
func (s *server) allocChecksRequest(allocID string) (any, error) {
	if s.cfg.AllocChecks == nil {
		return nil, s.execElsewhere(allocID, true)
	}
	st, err := s.cfg.AllocChecks.AllocChecks(allocID)
	if isNotFound(err) {
		return nil, s.execElsewhere(allocID, false)
	}
	return st, err
}
