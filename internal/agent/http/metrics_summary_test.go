package httpapi

import (
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
)

func sampled(name string, vals ...float64) metrics.SampledValue {
	agg := &metrics.AggregateSample{}
	for _, v := range vals {
		agg.Ingest(v, 10)
	}
	return metrics.SampledValue{Name: name, AggregateSample: agg}
}

func TestIntervalShown(t *testing.T) {
	base := time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC)
	first := metrics.NewIntervalMetrics(base) // the agent started at base+9.9s
	first.Gauges["runtime"] = metrics.GaugeValue{Name: "runtime", Value: 1}
	first.Gauges["old"] = metrics.GaugeValue{Name: "old", Value: 7}
	first.Counters["state"] = sampled("state", 1)
	first.Samples["barrier"] = sampled("barrier", 4)
	second := metrics.NewIntervalMetrics(base.Add(10 * time.Second))
	second.Gauges["runtime"] = metrics.GaugeValue{Name: "runtime", Value: 2}
	second.Counters["state"] = sampled("state", 1, 1)
	second.Samples["barrier"] = sampled("barrier", 2, 6)
	second.Samples["fsm"] = sampled("fsm", 3)
	third := metrics.NewIntervalMetrics(base.Add(20 * time.Second))
	third.Gauges["runtime"] = metrics.GaugeValue{Name: "runtime", Value: 3}
	started := base.Add(9900 * time.Millisecond)

	// Only the current interval: it is shown.
	if got := intervalShown([]*metrics.IntervalMetrics{first}, started); got != first {
		t.Fatal("a lone current interval is not shown")
	}

	// The agent's first interval is partial: shown merged with the current.
	got := summarize(intervalShown([]*metrics.IntervalMetrics{first, second}, started))
	if got.Timestamp != base.String() {
		t.Fatalf("timestamp %s", got.Timestamp)
	}
	gauges := map[string]float32{}
	for _, g := range got.Gauges {
		gauges[g.Name] = g.Value
	}
	if len(gauges) != 2 || gauges["runtime"] != 2 || gauges["old"] != 7 {
		t.Fatalf("gauges %v: want the newer value of each", gauges)
	}
	if len(got.Counters) != 1 || got.Counters[0].Count != 3 || got.Counters[0].Sum != 3 {
		t.Fatalf("counters %+v", got.Counters)
	}
	var barrier *metrics.SampledValue
	for i := range got.Samples {
		if got.Samples[i].Name == "barrier" {
			barrier = &got.Samples[i]
		}
	}
	if len(got.Samples) != 2 || barrier == nil || barrier.Count != 3 || barrier.Min != 2 || barrier.Max != 6 || barrier.Mean != 4 {
		t.Fatalf("samples %+v", got.Samples)
	}
	// Merging did not touch the sink's own intervals.
	if first.Counters["state"].Count != 1 || second.Counters["state"].Count != 2 || first.Samples["barrier"].Max != 4 {
		t.Fatal("merge changed the sink's intervals")
	}

	// Once a whole interval has finished, it alone is shown.
	if got := intervalShown([]*metrics.IntervalMetrics{first, second, third}, started); got != second {
		t.Fatal("a finished whole interval is not shown alone")
	}
	// An agent that started exactly on a boundary has no partial interval.
	if got := intervalShown([]*metrics.IntervalMetrics{first, second}, base); got != first {
		t.Fatal("an interval that began with the agent is treated as partial")
	}
}
