package integration

import (
	"fmt"
	"testing"
	"time"
)

// A server agent and a separate client agent (-client -servers) run a job:
// registration, heartbeats, alloc pulls and status pushes all cross the RPC
// port between processes.
func TestSeparateServerAndClient(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1},
	})
	srv.waitReady(false)
	cli := startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
	})
	_ = cli
	waitFor(t, 20*time.Second, "client node ready on the server", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	if _, _, err := srv.client.Jobs().Register(rawExecJob("remote", "batch", 2, "echo remote $NOMAD_ALLOC_INDEX"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "both allocs complete", func() bool {
		s, _, err := srv.client.Jobs().Summary("remote", nil)
		return err == nil && s.Summary["g"].Complete == 2
	})
}
