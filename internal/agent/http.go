package agent

import (
	"errors"
	"net/http"
	"time"

	"github.com/hashicorp/nomad/api"

	httpapi "github.com/drover-project/drover/internal/agent/http"
	"github.com/drover-project/drover/internal/jobspec"
)

func (a *Agent) startHTTP(prom http.Handler) {
	cfg := httpapi.Config{
		RPC:         a,
		Agent:       &agentInfo{a: a},
		ParseJob:    parseJob,
		Logger:      a.logger.Named("http"),
		MetricsSink: a.inmem,
		PromHandler: prom,
		Region:      a.config.Region,
	}
	if a.client != nil {
		cfg.FS = a.client
	}
	a.httpSrv = &http.Server{Handler: httpapi.NewHandler(cfg), ReadHeaderTimeout: 30 * time.Second}
	go func() {
		if err := a.httpSrv.Serve(a.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.logger.Error("HTTP server stopped", "error", err)
		}
	}()
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
