package httpapi

import (
	"sort"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
)

// metricsSummary is what /v1/metrics shows: the newest finished interval of
// the in-memory sink (the current one while none has finished), as Nomad
// shows it. Intervals are aligned to the wall clock, so the interval the
// agent started in is partial: it holds the metrics of the start-up but not a
// whole period, and whatever the start-up emitted after the boundary lands in
// the next one. While that partial interval is the newest finished one, it is
// shown merged with the current interval, so the first answers cover the
// whole time since the agent started instead of whichever side of the
// boundary a start-up metric happened to fall on.
func metricsSummary(sink *metrics.InmemSink, since time.Time) metrics.MetricsSummary {
	return summarize(intervalShown(sink.Data(), since))
}

// intervalShown picks (or merges) what the summary shows from the sink's
// intervals, oldest first, the last being the current one.
func intervalShown(data []*metrics.IntervalMetrics, since time.Time) *metrics.IntervalMetrics {
	switch n := len(data); {
	case n == 1:
		return data[0]
	case data[n-2].Interval.Before(since):
		return mergeIntervals(data[n-2], data[n-1])
	default:
		return data[n-2]
	}
}

// mergeIntervals returns one interval holding what older and newer hold:
// the newer gauge values, counters and samples aggregated over both, every
// point. It is stamped with the older interval's start.
func mergeIntervals(older, newer *metrics.IntervalMetrics) *metrics.IntervalMetrics {
	older.RLock()
	defer older.RUnlock()
	newer.RLock()
	defer newer.RUnlock()
	m := metrics.NewIntervalMetrics(older.Interval)
	for _, iv := range []*metrics.IntervalMetrics{older, newer} {
		for k, v := range iv.Gauges {
			m.Gauges[k] = v
		}
		for k, v := range iv.Points {
			m.Points[k] = append(m.Points[k], v...)
		}
		mergeSampled(m.Counters, iv.Counters)
		mergeSampled(m.Samples, iv.Samples)
	}
	return m
}

// mergeSampled adds src's aggregates into dst, copying rather than sharing
// them.
func mergeSampled(dst, src map[string]metrics.SampledValue) {
	for k, v := range src {
		if v.AggregateSample == nil {
			continue
		}
		cur, ok := dst[k]
		if !ok {
			agg := *v.AggregateSample
			v.AggregateSample = &agg
			dst[k] = v
			continue
		}
		a, b := cur.AggregateSample, v.AggregateSample
		if b.Count > 0 {
			if a.Count == 0 || b.Min < a.Min {
				a.Min = b.Min
			}
			if a.Count == 0 || b.Max > a.Max {
				a.Max = b.Max
			}
		}
		a.Count += b.Count
		a.Sum += b.Sum
		a.SumSq += b.SumSq
		a.Rate += b.Rate
		if b.LastUpdated.After(a.LastUpdated) {
			a.LastUpdated = b.LastUpdated
		}
	}
}

// summarize formats one interval as /v1/metrics answers it: each kind of
// metric sorted by its key, labels as a map.
func summarize(iv *metrics.IntervalMetrics) metrics.MetricsSummary {
	iv.RLock()
	defer iv.RUnlock()
	s := metrics.MetricsSummary{
		Timestamp: iv.Interval.Round(time.Second).UTC().String(),
		Gauges:    make([]metrics.GaugeValue, 0, len(iv.Gauges)),
		Points:    make([]metrics.PointValue, 0, len(iv.Points)),
	}
	for name, pts := range iv.Points {
		s.Points = append(s.Points, metrics.PointValue{Name: name, Points: pts})
	}
	sort.Slice(s.Points, func(i, j int) bool { return s.Points[i].Name < s.Points[j].Name })
	for hash, g := range iv.Gauges {
		g.Hash, g.DisplayLabels, g.Labels = hash, labelMap(g.Labels), nil
		s.Gauges = append(s.Gauges, g)
	}
	sort.Slice(s.Gauges, func(i, j int) bool { return s.Gauges[i].Hash < s.Gauges[j].Hash })
	s.Counters = summarizeSampled(iv.Counters)
	s.Samples = summarizeSampled(iv.Samples)
	return s
}

func summarizeSampled(src map[string]metrics.SampledValue) []metrics.SampledValue {
	out := make([]metrics.SampledValue, 0, len(src))
	for hash, v := range src {
		if v.AggregateSample == nil {
			continue
		}
		out = append(out, metrics.SampledValue{Name: v.Name, Hash: hash, AggregateSample: v.AggregateSample,
			Mean: v.AggregateSample.Mean(), Stddev: v.AggregateSample.Stddev(), DisplayLabels: labelMap(v.Labels)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Hash < out[j].Hash })
	return out
}

func labelMap(labels []metrics.Label) map[string]string {
	m := make(map[string]string, len(labels))
	for _, l := range labels {
		m[l.Name] = l.Value
	}
	return m
}
