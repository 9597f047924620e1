package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// ACL replication between two regions of real agents, through the HTTP
// API: east is authoritative; west (server.authoritative_region = "east",
// acl.replication_token = east's bootstrap secret) joins it over gossip.
// A policy and a global token made in east work in west; a local one does
// not; a policy, a namespace and a node pool written through west land in
// east (and the latter two come back); /v1/agent/self shows the
// replication's state.
func TestACLReplicationAcrossRegions(t *testing.T) {
	root := "3f6d2b1a-8c4e-4d7f-a9b0-1e2d3c4b5a69"
	east := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"region": "east",
		"server": map[string]any{"enabled": true, "bootstrap_expect": 1},
		"acl":    map[string]any{"enabled": true},
	})
	west := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"region": "west",
		"server": map[string]any{"enabled": true, "bootstrap_expect": 1, "authoritative_region": "east",
			"server_join": map[string]any{"retry_join": []string{fmt.Sprintf("127.0.0.1:%d", east.serf)}, "retry_interval": "1s"}},
		"acl": map[string]any{"enabled": true, "replication_token": root},
	})
	waitFor(t, 30*time.Second, "east's signing key", func() bool { return len(east.jwksKeys()) > 0 })
	if _, _, err := east.client.ACLTokens().BootstrapOpts(root, nil); err != nil {
		t.Fatalf("bootstrap east: %v", err)
	}
	east.client.SetSecretID(root)
	if _, err := east.client.ACLPolicies().Upsert(&api.ACLPolicy{Name: "node-read", Rules: `node { policy = "read" }`}, nil); err != nil {
		t.Fatal(err)
	}
	local, _, err := east.client.ACLTokens().Create(&api.ACLToken{Name: "east-only", Type: "client", Policies: []string{"node-read"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	global, _, err := east.client.ACLTokens().Create(&api.ACLToken{Name: "everywhere", Type: "client", Policies: []string{"node-read"}, Global: true}, nil)
	if err != nil {
		t.Fatal(err)
	}

	// In west, the global token reads nodes and nothing more.
	west.client.SetSecretID(global.SecretID)
	waitFor(t, 30*time.Second, "the global token working in west", func() bool {
		_, _, err := west.client.Nodes().List(nil)
		return err == nil
	})
	if _, _, err := west.client.Jobs().List(nil); err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("the global token listing jobs in west: %v, want Permission denied", err)
	}
	west.client.SetSecretID(local.SecretID)
	if _, _, err := west.client.Nodes().List(nil); err == nil || !strings.Contains(err.Error(), "ACL token not found") {
		t.Fatalf("east's local token in west: %v, want ACL token not found", err)
	}

	// A policy written through west is east's.
	west.client.SetSecretID(root)
	if _, err := west.client.ACLPolicies().Upsert(&api.ACLPolicy{Name: "from-west", Rules: `agent { policy = "read" }`}, nil); err != nil {
		t.Fatalf("policy write through west: %v", err)
	}
	if p, _, err := east.client.ACLPolicies().Info("from-west", nil); err != nil || p == nil {
		t.Fatalf("the policy written through west in east: %v", err)
	}

	// A namespace and a node pool applied through west are east's, and
	// come back to west by replication.
	if _, err := west.client.NodePools().Register(&api.NodePool{Name: "gpu", Description: "from west"}, nil); err != nil {
		t.Fatalf("node pool apply through west: %v", err)
	}
	if _, err := west.client.Namespaces().Register(&api.Namespace{Name: "team-a", Description: "from west",
		NodePoolConfiguration: &api.NamespaceNodePoolConfiguration{Default: "gpu"}}, nil); err != nil {
		t.Fatalf("namespace apply through west: %v", err)
	}
	if ns, _, err := east.client.Namespaces().Info("team-a", nil); err != nil || ns.Description != "from west" {
		t.Fatalf("the namespace applied through west in east: %+v, %v", ns, err)
	}
	waitFor(t, 30*time.Second, "the namespace and node pool back in west", func() bool {
		ns, _, err1 := west.client.Namespaces().Info("team-a", &api.QueryOptions{AllowStale: true})
		p, _, err2 := west.client.NodePools().Info("gpu", &api.QueryOptions{AllowStale: true})
		return err1 == nil && err2 == nil && ns != nil && p != nil && p.Description == "from west"
	})

	// West's event stream asked of east is west's (east polls it from
	// west): it holds the creation of a token local to west.
	west.client.SetSecretID(root)
	westOnly, _, err := west.client.ACLTokens().Create(&api.ACLToken{Name: "west-only", Type: "client", Policies: []string{"node-read"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	east.client.SetSecretID(root)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch, err := east.client.EventStream().Stream(ctx, map[api.Topic][]string{"ACLToken": {westOnly.AccessorID}}, 1, &api.QueryOptions{Region: "west"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case evs := <-ch:
		if evs.Err != nil || len(evs.Events) == 0 || evs.Events[0].Key != westOnly.AccessorID {
			t.Fatalf("west's stream through east: %+v", evs)
		}
	case <-ctx.Done():
		t.Fatal("west's stream through east has no event of west's local token after 20 s")
	}
	cancel()
	if _, err := east.client.EventStream().Stream(context.Background(), nil, 0, &api.QueryOptions{Region: "nope"}); err == nil || !strings.Contains(err.Error(), "No path to region") {
		t.Fatalf("the stream of an unknown region: %v, want No path to region", err)
	}

	self, err := west.client.Agent().Self()
	if err != nil {
		t.Fatal(err)
	}
	st := self.Stats["acl_replication"]
	if st["authoritative_region"] != "east" || st["running"] != "true" || st["policies.last_success"] == "" || st["tokens.last_error"] != "" ||
		st["namespaces.last_success"] == "" || st["node-pools.last_error"] != "" || st["namespaces.kept"] != "" {
		t.Fatalf("west's stats.acl_replication: %v", st)
	}
}
