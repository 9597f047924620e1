package agent

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// monitorDepth is how many log lines a monitor stream may fall behind
// before lines are dropped: a slow reader must never block the agent's
// logging.
const monitorDepth = 512

// logMonitor streams the agent's log lines to /v1/agent/monitor readers,
// each at its own level and format, whatever level the agent itself logs at.
type logMonitor struct{ root hclog.InterceptLogger }

// Monitor registers a sink at level and returns its lines and a stop
// function. Lines a slow reader cannot take are dropped; the count of
// dropped lines since the last delivered one is reported by dropped.
func (m *logMonitor) Monitor(level hclog.Level, json, includeLocation bool) (lines <-chan []byte, dropped func() int64, stop func()) {
	w := &chanWriter{ch: make(chan []byte, monitorDepth)}
	sink := hclog.NewSinkAdapter(&hclog.LoggerOptions{Level: level, JSONFormat: json, IncludeLocation: includeLocation,
		Output: w})
	m.root.RegisterSink(sink)
	var once sync.Once
	return w.ch, func() int64 { return w.dropped.Swap(0) }, func() { once.Do(func() { m.root.DeregisterSink(sink) }) }
}

// chanWriter hands each write (one formatted log line) to a channel without
// ever blocking.
type chanWriter struct {
	ch      chan []byte
	dropped atomic.Int64
}

func (w *chanWriter) Write(p []byte) (int, error) {
	line := append([]byte(nil), p...)
	select {
	case w.ch <- line:
	default:
		w.dropped.Add(1)
	}
	return len(p), nil
}
