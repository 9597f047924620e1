package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"
)

type fakeMonitor struct {
	level   chan hclog.Level
	stopped chan struct{}
}

func (f *fakeMonitor) Monitor(level hclog.Level, json, loc bool) (<-chan []byte, func() int64, func()) {
	f.level <- level
	ch := make(chan []byte, 4)
	ch <- []byte("[DEBUG] agent: first\n")
	ch <- []byte("[DEBUG] agent: second\n")
	drops := int64(3)
	return ch, func() int64 { n := drops; drops = 0; return n }, func() { close(f.stopped) }
}

func TestAgentMonitor(t *testing.T) {
	fm := &fakeMonitor{level: make(chan hclog.Level, 1), stopped: make(chan struct{})}
	env := newEnv(t, func(c *Config) { c.Monitor = fm; c.Stats = fakeStats{id: "node-1"} })
	stop := make(chan struct{})
	frames, errCh := env.client.Agent().Monitor(stop, &api.QueryOptions{Params: map[string]string{"log_level": "debug", "node_id": "node-1"}})
	var got []string
	for len(got) < 3 {
		select {
		case f := <-frames:
			got = append(got, string(f.Data))
		case err := <-errCh:
			t.Fatal(err)
		case <-time.After(5 * time.Second):
			t.Fatalf("frames so far %q", got)
		}
	}
	if <-fm.level != hclog.Debug || !strings.Contains(got[0], "dropped 3 log lines") || got[1] != "[DEBUG] agent: first\n" || got[2] != "[DEBUG] agent: second\n" {
		t.Fatalf("frames %q", got)
	}
	close(stop)
	select {
	case <-fm.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the monitor was not stopped when the reader left")
	}

	for path, want := range map[string]string{
		"/v1/agent/monitor?log_level=loud":  "Unknown log level: loud",
		"/v1/agent/monitor?node_id=node-2":  `node_id "node-2" is not this agent's client`,
		"/v1/agent/monitor?log_json=maybe":  "log_json",
		"/v1/agent/monitor?server_id=other": `server_id "other" is not this agent`,
	} {
		if code, _, body := env.raw(t, "GET", path, ""); code != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
	bare := newEnv(t, nil)
	if code, _, _ := bare.raw(t, "GET", "/v1/agent/monitor", ""); code != http.StatusNotImplemented {
		t.Fatalf("no monitor: %d", code)
	}
}
