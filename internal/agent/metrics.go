package agent

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	prommetrics "github.com/hashicorp/go-metrics/compat/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/drover-project/drover/internal/agent/config"
)

// setupMetrics installs the process-wide go-metrics sinks the telemetry
// block asks for: always an in-memory sink for /v1/metrics JSON; a
// Prometheus sink for ?format=prometheus when prometheus_metrics is set; a
// statsd and a statsite sink when their addresses are. Raft and serf emit
// through the same global (go-metrics' compat layer), so their metrics are
// included. The runtime gauges are published once before it returns, so the
// first /v1/metrics answer already has them.
func setupMetrics(t *config.Telemetry, nodeName string) (*metrics.InmemSink, http.Handler, error) {
	if t == nil {
		t = &config.Telemetry{}
	}
	interval, retain := t.InMemoryCollectionInterval, t.InMemoryRetentionPeriod
	if interval <= 0 {
		interval = 10 * time.Second
	}
	if retain <= 0 {
		retain = time.Minute
	}
	inm := metrics.NewInmemSink(interval, retain)
	sinks := metrics.FanoutSink{inm}
	var prom http.Handler
	if t.PrometheusMetrics {
		// The Prometheus registry is process-wide: a second agent in one
		// process (tests) cannot register again and serves without it.
		if ps, err := prommetrics.NewPrometheusSinkFrom(prommetrics.PrometheusOpts{Expiration: time.Minute}); err == nil {
			sinks = append(sinks, ps)
			prom = promhttp.Handler()
		}
	}
	if t.StatsdAddr != "" {
		s, err := metrics.NewStatsdSink(t.StatsdAddr)
		if err != nil {
			return nil, nil, fmt.Errorf("agent: telemetry.statsd_address: %w", err)
		}
		sinks = append(sinks, s)
	}
	if t.StatsiteAddr != "" {
		s, err := metrics.NewStatsiteSink(t.StatsiteAddr)
		if err != nil {
			return nil, nil, fmt.Errorf("agent: telemetry.statsite_address: %w", err)
		}
		sinks = append(sinks, s)
	}

	cfg := metrics.DefaultConfig("nomad")
	cfg.EnableHostname = !t.DisableHostname
	if t.UseNodeName {
		cfg.HostName = nodeName
	} else if host, err := os.Hostname(); err == nil {
		cfg.HostName = host
	}
	cfg.EnableRuntimeMetrics = true
	if t.CollectionInterval > 0 {
		cfg.ProfileInterval = t.CollectionInterval
	}
	allow, block, err := prefixFilter(t.PrefixFilter)
	if err != nil {
		return nil, nil, err
	}
	cfg.AllowedPrefixes, cfg.BlockedPrefixes = allow, block
	if t.FilterDefault != nil {
		cfg.FilterDefault = *t.FilterDefault
	}
	m, err := metrics.NewGlobal(cfg, sinks)
	if err != nil {
		return nil, nil, err
	}
	m.EmitRuntimeStats()
	return inm, prom, nil
}

// prefixFilter splits telemetry.prefix_filter into allowed ("+nomad.raft")
// and blocked ("-nomad.client") metric prefixes.
func prefixFilter(rules []string) (allow, block []string, err error) {
	for _, r := range rules {
		switch {
		case len(r) > 1 && r[0] == '+':
			allow = append(allow, r[1:])
		case len(r) > 1 && r[0] == '-':
			block = append(block, r[1:])
		default:
			return nil, nil, fmt.Errorf("agent: telemetry.prefix_filter: %q must start with + (allow) or - (block) and name a prefix", strings.TrimSpace(r))
		}
	}
	return allow, block, nil
}
