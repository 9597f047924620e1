package agent

import (
	"context"
	"errors"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/agent/config"
	httpapi "github.com/drover-project/drover/internal/agent/http"
	"github.com/drover-project/drover/internal/events"
	"github.com/drover-project/drover/internal/jobspec"
	"github.com/drover-project/drover/internal/ui"
)

func (a *Agent) startHTTP(prom http.Handler) {
	cfg := httpapi.Config{
		RPC:          a,
		Agent:        &agentInfo{a: a},
		Membership:   &membership{a: a},
		ParseJob:     parseJob,
		Logger:       a.logger.Named("http"),
		MetricsSink:  a.inmem,
		MetricsSince: a.inmemSince,
		PromHandler:  prom,
		Region:       a.config.Region,
		EnableDebug:  a.config.EnableDebug,
	}
	if l := a.config.Limits; l != nil && l.HTTPMaxBodySize != "" {
		cfg.MaxBodyBytes, _ = config.ParseSize(l.HTTPMaxBodySize) // checked by Validate
	}
	if a.server != nil {
		cfg.Schedulers = schedulerWorkers{srv: a.server}
	}
	if a.config.ACL != nil && a.config.ACL.Enabled {
		var res httpapi.ACLResolver = &remoteACLs{a: a}
		if a.server != nil {
			res = serverACLs{a}
		}
		z := &httpapi.ACLAuthorizer{Resolver: res, RPC: a}
		if a.server == nil && a.client != nil {
			z.LookupToken = a.client.NodeSecret
		}
		cfg.Auth = z
	}
	switch {
	case a.server != nil && a.server.Events() != nil:
		cfg.Events = serverEvents{a, a.server.Events()}
	case a.server == nil && a.servers != nil && len(a.servers.Servers()) > 0:
		cfg.Events = forwardedEvents{a}
	}
	if a.client != nil {
		cfg.FS = a.client
		cfg.Stats = a.client
		cfg.NodeMeta = a.client
		cfg.Identity = a.client
		cfg.Exec = a.client
		cfg.AllocStats = a.client
		cfg.GC = a.client
		cfg.Allocs = a.client
		cfg.AllocOps = a.client
		cfg.AllocChecks = a.client
		cfg.AllocSnapshot = a.client
	}
	cfg.Reach = nodeDialer{a}
	if il, ok := a.logger.(hclog.InterceptLogger); ok {
		cfg.Monitor = &logMonitor{root: il}
	}
	api := httpapi.NewHandler(cfg)
	a.httpAPI = api
	a.startNodeSession(api)
	if a.client != nil {
		a.client.SetTaskAPI(api)
	}
	var h http.Handler = ui.Mount(api)
	if a.config.EnableDebug {
		h = withPprof(h)
	}
	a.httpSrv = &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second,
		// Refused TLS handshakes (no client certificate, unknown CA) are
		// logged with the agent's other lines, not raw on stderr.
		ErrorLog: a.logger.Named("http").StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Info})}
	go func() {
		if err := a.httpSrv.Serve(a.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.logger.Error("HTTP server stopped", "error", err)
		}
	}()
}

// serverEvents serves /v1/event/stream from this server's own broker: each
// server applies every entry, so no request for this region is forwarded.
// Another region's stream (req.Region) is polled from one of its servers,
// as a client-only agent polls its own region's.
type serverEvents struct {
	a *Agent
	b *events.Broker
}

func (e serverEvents) SubscribeEvents(req *events.Request) (httpapi.EventSubscription, error) {
	if req.Region != "" {
		return forwardedEvents{e.a}.SubscribeEvents(req)
	}
	return e.b.Subscribe(req), nil
}

// forwardedEvents serves /v1/event/stream on a client-only agent: a chain
// of bounded long polls (Event.Poll) to a server, each continuing where
// the last left off, so the reader sees the server's stream unchanged.
type forwardedEvents struct{ a *Agent }

func (f forwardedEvents) SubscribeEvents(req *events.Request) (httpapi.EventSubscription, error) {
	return &forwardedSub{a: f.a, req: *req}, nil
}

type forwardedSub struct {
	a       *Agent
	req     events.Request // Index: where the next poll starts
	started bool           // a poll went through the stream up to req.Index-1
	frames  [][]byte       // received, not yet handed out
}

// TokenCheckedUpstream: the server checks the reader's token at every
// poll, so the HTTP handler need not check it again before each frame.
func (s *forwardedSub) TokenCheckedUpstream() bool { return true }

func (s *forwardedSub) NextFrame(ctx context.Context) ([]byte, error) {
	for len(s.frames) == 0 {
		wait := events.MaxPollWait
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if wait <= 0 {
			return nil, context.DeadlineExceeded
		}
		var reply events.PollResponse
		args := &events.PollRequest{Req: s.req, Continue: s.started, Wait: wait}
		if err := s.a.RPC("Event.Poll", args, &reply); err != nil {
			return nil, err
		}
		if reply.Err != "" {
			return nil, errors.New(reply.Err)
		}
		if reply.Last > 0 {
			s.req.Index, s.started = reply.Last+1, true
		}
		s.frames = reply.Frames
	}
	f := s.frames[0]
	s.frames = s.frames[1:]
	return f, nil
}

// parseJob backs /v1/jobs/parse: the agent parses HCL for non-Go clients.
// File functions stay disabled: the source came over the network.
func parseJob(hcl, vars string, canonicalize bool) (*api.Job, error) {
	job, err := jobspec.Parse("input.hcl", []byte(hcl), jobspec.ParseConfig{VarContent: vars})
	if err != nil {
		return nil, err
	}
	if canonicalize {
		job.Canonicalize()
	}
	return job, nil
}

// withPprof serves Go's runtime profiles under /debug/pprof/ (as Nomad does
// when enable_debug is set; dev mode sets it) and everything else through api.
// Only wired when enable_debug is true: profiles expose internals.
func withPprof(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/", api)
	return mux
}
