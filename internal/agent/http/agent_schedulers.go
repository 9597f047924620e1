package httpapi

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// SchedulerWorkers is the local server's scheduler worker pool. It is nil
// when the agent runs no server.
type SchedulerWorkers interface {
	WorkerConfig() api.AgentSchedulerWorkerConfigResponse
	// SetWorkerConfig applies a new configuration and returns the one in
	// force; a bad one is a 400 naming the field.
	SetWorkerConfig(num int, enabled []string) (api.AgentSchedulerWorkerConfigResponse, error)
	WorkersInfo() api.AgentSchedulerWorkersInfo
}

// errServerOnly is Nomad's answer from a server-only agent endpoint on an
// agent that runs no server.
var errServerOnly = structs.NewErrCoded(http.StatusBadRequest, "Server only endpoint")

// errorDetailHeader carries the reason a request was refused when Nomad's
// answer body says less (PUT /v1/agent/schedulers/config's bare "Invalid
// request", which clients match on).
const errorDetailHeader = "X-Drover-Error-Detail"

// /v1/agent/schedulers: the local server's scheduler workers, one entry
// per worker (see internal/server/worker_pool.go for how Drover's slots
// and workers map onto Nomad's list).
func (s *server) agentSchedulersRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	if s.cfg.Schedulers == nil {
		return nil, errServerOnly
	}
	info := s.cfg.Schedulers.WorkersInfo()
	info.Schedulers = nonNil(info.Schedulers)
	return &info, nil
}

// /v1/agent/schedulers/config: GET reads and PUT/POST sets the local
// server's num_schedulers and enabled_schedulers, applied without a
// restart. num_schedulers = 0 pauses scheduling on this server, as in
// Nomad. A bad value answers Nomad's bare 400 "Invalid request", the reason
// in the X-Drover-Error-Detail header.
func (s *server) agentSchedulersConfigRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet && !isWrite(r.Method) {
		return nil, errInvalidMethod
	}
	if s.cfg.Schedulers == nil {
		return nil, errServerOnly
	}
	switch r.Method {
	case http.MethodGet:
		cfg := s.cfg.Schedulers.WorkerConfig()
		cfg.EnabledSchedulers = nonNil(cfg.EnabledSchedulers)
		return &cfg, nil
	case http.MethodPut, http.MethodPost:
	default:
		return nil, errInvalidMethod
	}
	// Pointers, to tell a missing num_schedulers (refused: it would pause
	// the server) from 0. A server_id in the body, as GET answers it, is
	// ignored so that the answer can be sent back as it is.
	var args struct {
		NumSchedulers     *int     `json:"num_schedulers"`
		EnabledSchedulers []string `json:"enabled_schedulers"`
	}
	if err := decodeBody(r, &args, false); err != nil {
		if code, msg := structs.ErrorCode(err); code == http.StatusBadRequest {
			return nil, structs.NewErrCoded(code, "Invalid request: %s", msg)
		}
		return nil, err
	}
	if args.NumSchedulers == nil {
		w.Header().Set(errorDetailHeader, "num_schedulers is required (0 pauses scheduling on this server)")
		return nil, structs.NewErrCoded(http.StatusBadRequest, "Invalid request")
	}
	cfg, err := s.cfg.Schedulers.SetWorkerConfig(*args.NumSchedulers, args.EnabledSchedulers)
	if err != nil {
		if code, msg := structs.ErrorCode(err); code == http.StatusBadRequest {
			w.Header().Set(errorDetailHeader, msg)
			return nil, structs.NewErrCoded(http.StatusBadRequest, "Invalid request")
		}
		return nil, err
	}
	cfg.EnabledSchedulers = nonNil(cfg.EnabledSchedulers)
	return &cfg, nil
}
