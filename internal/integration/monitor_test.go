package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// An agent writing only errors still streams DEBUG lines to a monitor that
// asks for them (drover monitor -log-level=debug).
func TestMonitorStreamsBelowTheAgentsLevel(t *testing.T) {
	a := startAgent(t, "", []string{"-dev"}, map[string]any{"log_level": "ERROR"})
	a.waitReady(true)
	stop := make(chan struct{})
	defer close(stop)
	frames, errCh := a.client.Agent().Monitor(stop, &api.QueryOptions{Params: map[string]string{"log_level": "debug"}})
	deadline := time.After(30 * time.Second)
	for {
		if _, err := a.client.Agent().Region(); err != nil {
			t.Fatal(err)
		}
		select {
		case f := <-frames:
			if f != nil && strings.Contains(string(f.Data), "[DEBUG]") && strings.Contains(string(f.Data), "request complete") {
				if strings.Contains(a.out.String(), "[DEBUG]") {
					t.Fatal("the agent's own output has DEBUG lines at log_level ERROR")
				}
				return
			}
		case err := <-errCh:
			t.Fatal(err)
		case <-deadline:
			t.Fatal("no DEBUG line streamed in 30 s")
		case <-time.After(100 * time.Millisecond):
		}
	}
}
