package agent

import (
	"net/http"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	prommetrics "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// setupMetrics installs the process-wide go-metrics sinks: an in-memory sink
// for /v1/metrics JSON and a Prometheus sink for ?format=prometheus. Raft and
// serf emit through the same global (go-metrics' compat layer), so their
// metrics are included.
func setupMetrics(nodeName string) (*metrics.InmemSink, http.Handler, error) {
	inm := metrics.NewInmemSink(10*time.Second, time.Minute)
	sinks := metrics.FanoutSink{inm}
	var prom http.Handler
	if ps, err := prommetrics.NewPrometheusSinkFrom(prommetrics.PrometheusOpts{Expiration: time.Minute}); err == nil {
		sinks = append(sinks, ps)
		prom = promhttp.Handler()
	}
	cfg := metrics.DefaultConfig("nomad")
	cfg.EnableHostname = false
	cfg.HostName = nodeName
	cfg.EnableRuntimeMetrics = true
	if _, err := metrics.NewGlobal(cfg, sinks); err != nil {
		return nil, nil, err
	}
	return inm, prom, nil
}
