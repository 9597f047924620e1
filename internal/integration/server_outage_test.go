package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A client agent outlives its server: the server is killed (SIGKILL) while
// the client runs a service allocation; the task keeps running, the client
// retries its heartbeats with backoff, and when the server is back (same
// data dir and ports) the client registers again and pushes its
// allocations' state. The allocation is the same one, still running, never
// replaced; the node is ready again.
func TestClientOutlivesServerOutage(t *testing.T) {
	srvDir := t.TempDir()
	srv := startAgent(t, srvDir, []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1, "min_heartbeat_ttl": "1s", "heartbeat_grace": "2s"},
	})
	srv.waitReady(false)
	cli := startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
	})
	waitFor(t, 20*time.Second, "client node ready", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	if _, _, err := srv.client.Jobs().Register(rawExecJob("outage", "service", 1, "while true; do sleep 0.2; done"), nil); err != nil {
		t.Fatal(err)
	}
	var allocID string
	var before uint64
	waitFor(t, 20*time.Second, "the allocation running", func() bool {
		for _, s := range srv.allocsOf("outage") {
			if s.ClientStatus == "running" {
				allocID, before = s.ID, s.ModifyIndex
				return true
			}
		}
		return false
	})
	waitFor(t, 30*time.Second, "the task's processes", func() bool { return countTaskProcs(allocID) > 0 })

	srv.kill()
	waitFor(t, 30*time.Second, "the client noticing the server is gone", func() bool {
		return strings.Contains(cli.out.String(), "heartbeat failed")
	})
	if countTaskProcs(allocID) == 0 {
		t.Fatal("the task stopped while the server was down")
	}

	srv.start()
	waitFor(t, 30*time.Second, "the client registering again", func() bool {
		return strings.Contains(cli.out.String(), "servers answer again")
	})
	waitFor(t, 30*time.Second, "the allocation's state pushed again, the node ready", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		if err != nil || len(nodes) != 1 || nodes[0].Status != "ready" {
			return false
		}
		allocs, _, err := srv.client.Jobs().Allocations("outage", true, nil)
		if err != nil {
			return false
		}
		for _, a := range allocs {
			if a.ID == allocID && a.ClientStatus == "running" && a.ModifyIndex > before {
				return true
			}
		}
		return false
	})
	allocs := srv.allocsOf("outage")
	if len(allocs) != 1 || allocs[0].ID != allocID || countTaskProcs(allocID) == 0 {
		t.Fatalf("after the outage: %d allocations (want only %s, running)", len(allocs), allocID)
	}
}
