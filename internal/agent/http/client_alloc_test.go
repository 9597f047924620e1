package httpapi

import (
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

type fakeAllocStats struct{}

func (fakeAllocStats) AllocStats(id string) (*api.AllocResourceUsage, error) {
	if id != "a1" {
		return nil, structs.NewErrCoded(404, "Unknown allocation %q", id)
	}
	u := &api.ResourceUsage{MemoryStats: &api.MemoryStats{Usage: 4096, Measured: []string{"Usage"}}, CpuStats: &api.CpuStats{Percent: 12.5}}
	return &api.AllocResourceUsage{ResourceUsage: u, Tasks: map[string]*api.TaskResourceUsage{"web": {ResourceUsage: u, Timestamp: 7}}, Timestamp: 7}, nil
}

// The allocation's usage as Nomad's api client reads it; an allocation
// the client does not run is a 404 naming it.
func TestAllocStatsRequest(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.AllocStats = fakeAllocStats{} })
	u, err := env.client.Allocations().Stats(&api.Allocation{ID: "a1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u.Tasks["web"] == nil || u.Tasks["web"].ResourceUsage.MemoryStats.Usage != 4096 || u.ResourceUsage.CpuStats.Percent != 12.5 {
		t.Fatalf("stats %+v", u)
	}
	_, err = env.client.Allocations().Stats(&api.Allocation{ID: "a2"}, nil)
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), `Unknown allocation "a2"`) {
		t.Fatalf("unknown allocation: %v", err)
	}
	noClient := newEnv(t, nil)
	if code, _, body := noClient.raw(t, "GET", "/v1/client/allocation/a1/stats", ""); code != 404 || !strings.Contains(body, "Unknown allocation") {
		t.Fatalf("no client: %d %s", code, body)
	}
}
