package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

type fakeStats struct{ id string }

func (f fakeStats) NodeID() string { return f.id }
func (f fakeStats) HostStats() (*api.HostStats, error) {
	return &api.HostStats{Memory: &api.HostMemoryStats{Total: 8 << 30, Available: 6 << 30},
		AllocDirStats: &api.HostDiskStats{Mountpoint: "/", Size: 100 << 30}, Uptime: 42}, nil
}

func TestClientStats(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.Stats = fakeStats{id: "node-1"} })
	for _, id := range []string{"", "node-1"} {
		s, err := env.client.Nodes().Stats(id, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s.Memory == nil || s.Memory.Available != 6<<30 || s.AllocDirStats == nil || s.AllocDirStats.Size != 100<<30 || s.Uptime != 42 {
			t.Fatalf("stats for %q: %+v", id, s)
		}
	}
	if code, _, body := env.raw(t, "GET", "/v1/client/stats?node_id=node-2", ""); code != http.StatusBadRequest ||
		!strings.Contains(body, `node_id "node-2" is not this agent's client (node-1)`) {
		t.Fatalf("another node: %d %q", code, body)
	}
	if code, _, _ := env.raw(t, "PUT", "/v1/client/stats", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("PUT: %d", code)
	}
	bare := newEnv(t, nil)
	if code, _, body := bare.raw(t, "GET", "/v1/client/stats", ""); code != http.StatusBadRequest || !strings.Contains(body, "does not run a Nomad client") {
		t.Fatalf("no client: %d %q", code, body)
	}
}
