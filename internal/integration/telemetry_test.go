package integration

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// metricsNow returns what /v1/metrics lists: gauges by name, and the names
// of the counters and of the samples.
func metricsNow(t *testing.T, a *agent) (gauges map[string]api.GaugeValue, counters, samples map[string]bool) {
	t.Helper()
	m, _, err := a.client.Operator().MetricsSummary(nil)
	if err != nil {
		t.Fatal(err)
	}
	gauges, counters, samples = map[string]api.GaugeValue{}, map[string]bool{}, map[string]bool{}
	for _, g := range m.Gauges {
		gauges[g.Name] = g
	}
	for _, c := range m.Counters {
		counters[c.Name] = true
	}
	for _, s := range m.Samples {
		samples[s.Name] = true
	}
	return gauges, counters, samples
}

// The first /v1/metrics answer after an agent becomes ready already has
// gauges, counters and samples (what Nomad's api tests and dashboards
// expect), whichever side of an interval boundary the start-up fell on.
func TestMetricsFromTheFirstAnswer(t *testing.T) {
	a := devAgent(t)
	gauges, counters, samples := metricsNow(t, a)
	if len(gauges) == 0 || len(counters) == 0 || len(samples) == 0 {
		t.Fatalf("first summary: %d gauges, %d counters, %d samples", len(gauges), len(counters), len(samples))
	}
	// Dev mode keeps Nomad's default of the hostname in gauge names: find
	// the leader's broker gauge by its suffix.
	found := false
	for name := range gauges {
		if strings.HasSuffix(name, ".nomad.broker.total_ready") && strings.HasPrefix(name, "nomad.") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no broker gauge among %v", keys(gauges))
	}
	if !samples["nomad.nomad.leader.barrier"] {
		t.Fatalf("no leader barrier sample among %v", keys(samples))
	}
	// Dev mode turns Prometheus on.
	resp, err := http.Get(a.url("/v1/metrics?format=prometheus"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "# HELP") {
		t.Fatalf("prometheus: %d %.200q", resp.StatusCode, body)
	}
}

// The telemetry block is honoured (the in-memory interval, the collection
// interval, disable_hostname), and running a job shows up in the scheduler,
// plan, FSM and client metrics.
func TestMetricsFollowTheTelemetryBlock(t *testing.T) {
	a := startAgent(t, "", []string{"-dev"}, map[string]any{
		"telemetry": map[string]any{
			"in_memory_collection_interval": "1s",
			"collection_interval":           "200ms",
			"disable_hostname":              true,
		},
	})
	a.waitReady(true)
	job := rawExecJob("metrics", "service", 1, "sleep 300")
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"nomad.nomad.fsm.register_job", "nomad.nomad.worker.invoke_scheduler.service",
		"nomad.nomad.plan.evaluate", "nomad.nomad.plan.apply", "nomad.nomad.plan.submit",
		"nomad.nomad.worker.submit_plan", "nomad.nomad.fsm.alloc_client_update",
	}
	// Each finished 1 s interval is shown once it ends; the job's metrics
	// are spread over the intervals it took, so collect across answers.
	seen := map[string]bool{}
	var running api.GaugeValue
	waitFor(t, 30*time.Second, "job metrics", func() bool {
		gauges, _, samples := metricsNow(t, a)
		for name := range samples {
			seen[name] = true
		}
		running = gauges["nomad.client.allocations.running"]
		for _, w := range want {
			if !seen[w] {
				return false
			}
		}
		// -dev publishes node metrics: the job's 20 MHz are allocated.
		return running.Value == 1 && gauges["nomad.client.allocated.cpu"].Value == 20 &&
			gauges["nomad.client.host.memory.total"].Value > 0
	})
	if running.DisplayLabels["node_id"] == "" || running.DisplayLabels["datacenter"] != "dc1" || running.DisplayLabels["node_pool"] != "default" {
		t.Fatalf("client gauge labels %v", running.DisplayLabels)
	}
	gauges, _, _ := metricsNow(t, a)
	if _, ok := gauges["nomad.nomad.broker.total_ready"]; !ok {
		t.Fatalf("disable_hostname: no nomad.nomad.broker.total_ready among %v", keys(gauges))
	}

	// The same host sample through /v1/client/stats.
	stats, err := a.client.Nodes().Stats(running.DisplayLabels["node_id"], nil)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Memory == nil || stats.Memory.Available == 0 || len(stats.CPU) == 0 || stats.AllocDirStats == nil || stats.AllocDirStats.Size == 0 {
		t.Fatalf("host stats %+v", stats)
	}
}

// Outside -dev, Prometheus is served only when telemetry asks for it.
func TestPrometheusOnlyWhenAsked(t *testing.T) {
	for _, on := range []bool{false, true} {
		a := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
			"telemetry": map[string]any{"prometheus_metrics": on},
		})
		a.waitReady(false)
		resp, err := http.Get(a.url("/v1/metrics?format=prometheus"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if on && (resp.StatusCode != 200 || !strings.Contains(string(body), "# HELP")) {
			t.Fatalf("prometheus on: %d %.200q", resp.StatusCode, body)
		}
		if !on && (resp.StatusCode != http.StatusUnsupportedMediaType || !strings.Contains(string(body), "Prometheus is not enabled")) {
			t.Fatalf("prometheus off: %d %.200q", resp.StatusCode, body)
		}
		a.stop()
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
