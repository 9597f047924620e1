package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// LogMonitor streams the agent's own log lines at a level of the reader's
// choosing.
type LogMonitor interface {
	// Monitor returns the lines, a counter of lines dropped because the
	// reader fell behind (read and reset), and a stop function.
	Monitor(level hclog.Level, json, includeLocation bool) (lines <-chan []byte, dropped func() int64, stop func())
}

// /v1/agent/monitor?log_level=&log_json=&log_include_location=&plain=: this
// agent's log, streamed as it is written (nomad monitor). node_id and
// server_id may name this agent; another agent is refused rather than
// relayed.
func (s *server) agentMonitorRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	if s.cfg.Monitor == nil {
		return nil, structs.NewErrCoded(http.StatusNotImplemented, "this agent's logger cannot be monitored")
	}
	q := r.URL.Query()
	name := q.Get("log_level")
	if name == "" {
		name = "info"
	}
	level := hclog.LevelFromString(name)
	if level == hclog.NoLevel || level == hclog.Off {
		return nil, structs.NewErrCoded(400, "Unknown log level: %s", name)
	}
	if err := s.localNode(q.Get("node_id"), "log"); err != nil {
		return nil, err
	}
	if id := q.Get("server_id"); id != "" && (s.cfg.Agent == nil || !s.cfg.Agent.IsServer() || !strings.EqualFold(id, s.cfg.Agent.NodeName())) {
		return nil, structs.NewErrCoded(400, "server_id %q is not this agent: ask that server's agent for its log", id)
	}
	jsonFmt, err := boolParam(r, "log_json", false)
	if err != nil {
		return nil, err
	}
	location, err := boolParam(r, "log_include_location", false)
	if err != nil {
		return nil, err
	}
	plain, err := boolParam(r, "plain", false)
	if err != nil {
		return nil, err
	}
	lines, dropped, stop := s.cfg.Monitor.Monitor(level, jsonFmt, location)
	produce := func(ctx context.Context, out chan<- *api.StreamFrame) error {
		defer stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case line := <-lines:
				if n := dropped(); n > 0 {
					note := fmt.Sprintf("[WARN]  monitor: dropped %d log lines: the reader fell behind\n", n)
					select {
					case out <- &api.StreamFrame{Data: []byte(note)}:
					case <-ctx.Done():
						return nil
					}
				}
				select {
				case out <- &api.StreamFrame{Data: line}:
				case <-ctx.Done():
					return nil
				}
			}
		}
	}
	return nil, s.streamFrames(w, r, true, plain, produce)
}
