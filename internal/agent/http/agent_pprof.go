package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// maxPprofSeconds bounds a CPU profile or trace.
const maxPprofSeconds = 300

// /v1/agent/pprof/<profile>?seconds=&debug=&gc=&server_id=&node_id=: this
// agent's runtime profiles as Nomad serves them: "profile" (CPU for
// seconds), "trace" (execution trace for seconds) or a named pprof profile
// (heap, goroutine, ...). With ACLs it needs agent:write (the route table);
// without, enable_debug.
func (s *server) agentPprofRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	if _, open := s.cfg.Auth.(allowAll); open && !s.cfg.EnableDebug {
		return nil, structs.NewErrCoded(http.StatusForbidden, "Permission denied")
	}
	parts, err := pathArgs(r, "/v1/agent/pprof/")
	if err != nil {
		return nil, err
	}
	if len(parts) != 1 || parts[0] == "" {
		return nil, errNotFound
	}
	q := r.URL.Query()
	if id := q.Get("server_id"); id != "" && !s.isSelfServer(id) {
		return nil, fmt.Errorf("unknown Nomad server %s", id)
	}
	if id := q.Get("node_id"); id != "" && (s.cfg.Stats == nil || s.cfg.Stats.NodeID() != id) {
		return nil, fmt.Errorf("unknown Nomad node %s", id)
	}
	secs, err := intParam(r, "seconds", 1)
	if err != nil {
		return nil, err
	}
	if secs <= 0 {
		secs = 1
	}
	secs = min(secs, maxPprofSeconds)
	debug, err := intParam(r, "debug", 0)
	if err != nil {
		return nil, err
	}
	gc, err := intParam(r, "gc", 0)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	wait := func() error {
		select {
		case <-time.After(time.Duration(secs) * time.Second):
			return nil
		case <-r.Context().Done():
			return r.Context().Err()
		}
	}
	switch name := parts[0]; name {
	case "profile":
		if err := pprof.StartCPUProfile(&buf); err != nil {
			return nil, structs.NewErrCoded(http.StatusInternalServerError, "Unable to start CPU profile: %v", err)
		}
		err := wait()
		pprof.StopCPUProfile()
		if err != nil {
			return nil, err
		}
	case "trace":
		if err := trace.Start(&buf); err != nil {
			return nil, structs.NewErrCoded(http.StatusInternalServerError, "Unable to start trace: %v", err)
		}
		err := wait()
		trace.Stop()
		if err != nil {
			return nil, err
		}
	default:
		p := pprof.Lookup(name)
		if p == nil {
			return nil, structs.NewErrCoded(http.StatusNotFound, "Unknown profile: %s", name)
		}
		if name == "heap" && gc > 0 {
			runtimeGC()
		}
		if err := p.WriteTo(&buf, int(debug)); err != nil {
			return nil, err
		}
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = w.Write(buf.Bytes())
	return nil, nil
}

// isSelfServer reports whether id names this agent's server
// ("<name>.<region>", or the name alone).
func (s *server) isSelfServer(id string) bool {
	if s.cfg.Agent == nil || !s.cfg.Agent.IsServer() {
		return false
	}
	name := s.cfg.Agent.NodeName()
	return id == name || id == name+"."+s.cfg.Agent.Region()
}

// runtimeGC runs a garbage collection before a heap profile (?gc=1).
var runtimeGC = runtime.GC
