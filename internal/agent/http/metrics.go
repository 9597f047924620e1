package httpapi

import (
	"net/http"
	"sync"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"

	"github.com/drover-project/drover/internal/structs"
)

var (
	fallbackSinkOnce sync.Once
	fallbackSink     *metrics.InmemSink
)

// /v1/metrics: go-metrics' in-memory summary as JSON (the shape of
// api.MetricsSummary), or Prometheus text with ?format=prometheus.
func (s *server) metricsRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	if r.URL.Query().Get("format") == "prometheus" {
		if s.cfg.PromHandler == nil {
			return nil, structs.NewErrCoded(http.StatusUnsupportedMediaType, "Prometheus is not enabled")
		}
		s.cfg.PromHandler.ServeHTTP(w, r)
		return nil, nil
	}
	sink := s.cfg.MetricsSink
	if sink == nil {
		// Readiness probes poll /v1/metrics: answer with an empty summary
		// rather than an error when the agent wired no sink.
		fallbackSinkOnce.Do(func() { fallbackSink = metrics.NewInmemSink(10*time.Second, time.Minute) })
		sink = fallbackSink
	}
	return metricsSummary(sink, s.cfg.MetricsSince), nil
}
