package integration

import (
	"fmt"
	"testing"
	"time"
)

// A client agent whose HTTP API is not on port 4646 registers the address
// it serves on. The node always said <ip>:4646, and the API client (the
// nomad CLI's alloc logs, alloc fs, alloc status -stats) goes to the node's
// HTTPAddr first: it reached nothing there (then waited for its timeout
// before asking a server) or, with another agent on 4646, got that agent's
// 404 "Unknown allocation" and gave up.
func TestClientNodeAdvertisesItsHTTPAddress(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1},
	})
	srv.waitReady(false)
	cl := startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, nil)
	var nodeID string
	waitFor(t, 30*time.Second, "the client's node", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		if err != nil || len(nodes) != 1 {
			return false
		}
		nodeID = nodes[0].ID
		return true
	})
	node, _, err := srv.client.Nodes().Info(nodeID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("127.0.0.1:%d", cl.http); node.HTTPAddr != want {
		t.Fatalf("node HTTPAddr %q, want the client agent's %q", node.HTTPAddr, want)
	}
	// What the API client does for a node's logs: reach it directly.
	nc, err := srv.client.GetNodeClient(nodeID, nil)
	if err != nil {
		t.Fatal(err)
	}
	self, err := nc.Agent().Self()
	if err != nil {
		t.Fatalf("the node's advertised HTTP address answers nothing: %v", err)
	}
	if got := self.Stats["client"]["node_id"]; got != nodeID {
		t.Fatalf("the node's advertised HTTP address is agent of node %q, want %q", got, nodeID)
	}
}
