package server

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// replicatedRegions starts two single-server regions with ACLs on, joined
// over gossip: east is authoritative and bootstrapped with root; west
// replicates from it with root as its replication token.
func replicatedRegions(t *testing.T) (east, west *Server, root string) {
	t.Helper()
	root = "5d2c1a8e-0f3b-4c6d-9e7a-2b1c0d9e8f7a"
	east = gossipServerIn(t, "e1", t.TempDir(), 1, "east", func(c *Config) { c.ACLEnabled = true })
	west = gossipServerIn(t, "w1", t.TempDir(), 1, "west", func(c *Config) {
		c.ACLEnabled = true
		c.AuthoritativeRegion = "east"
		c.ReplicationToken = root
	})
	waitFor(t, 10*time.Second, "both leaders", func() bool { return east.IsLeader() && west.IsLeader() })
	if n, err := west.Join([]string{serfAddr(east)}); err != nil || n != 1 {
		t.Fatalf("join: %d, %v", n, err)
	}
	var boot structs.ACLTokenResponse
	if err := east.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{BootstrapSecret: root}, &boot); err != nil {
		t.Fatalf("bootstrap east: %v", err)
	}
	return east, west, root
}

func upsertTokens(t *testing.T, s *Server, root string, toks ...*structs.ACLToken) []*structs.ACLToken {
	t.Helper()
	var out structs.ACLTokenUpsertResponse
	if err := s.RPC("ACL.UpsertTokens", &structs.ACLTokenUpsertRequest{Tokens: toks, WriteRequest: structs.WriteRequest{AuthToken: root}}, &out); err != nil {
		t.Fatalf("upsert tokens through %s: %v", s.Region(), err)
	}
	return out.Tokens
}

// A policy and a global token made in the authoritative region appear in
// the other region within seconds, and the token works there; a local
// token stays where it was made; a policy deleted upstream disappears;
// a policy or global token written in the replicating region lands in the
// authoritative one (and comes back), while a local token made there stays
// there untouched by replication.
func TestACLReplication(t *testing.T) {
	east, west, root := replicatedRegions(t)
	wr := structs.WriteRequest{AuthToken: root}

	if err := east.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "readers", Rules: `node { policy = "read" }`},
		{Name: "doomed", Rules: `agent { policy = "read" }`},
	}, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	local := upsertTokens(t, east, root, &structs.ACLToken{Name: "east-only", Type: structs.ACLClientToken, Policies: []string{"readers"}})[0]
	global := upsertTokens(t, east, root, &structs.ACLToken{Name: "everywhere", Type: structs.ACLClientToken, Policies: []string{"readers"}, Global: true})[0]

	waitFor(t, 10*time.Second, "the global token and its policy in west", func() bool {
		tok, _ := west.State().ACLTokenByAccessorID(nil, global.AccessorID)
		p, _ := west.State().ACLPolicyByName(nil, "readers")
		return tok != nil && p != nil
	})
	// The token authorizes in west: it resolves to its policy's rights,
	// and west's own endpoints accept it.
	_, a, err := west.ResolveACL(global.SecretID)
	if err != nil || !a.AllowNodeRead() || a.AllowNodeWrite() || a.IsManagement() {
		t.Fatalf("the global token in west: %v, node read %v", err, a != nil && a.AllowNodeRead())
	}
	var self structs.ACLTokenResponse
	if err := west.RPC("ACL.GetToken", &structs.ACLGetRequest{Name: "self", QueryOptions: structs.QueryOptions{AuthToken: global.SecretID}}, &self); err != nil || self.Token == nil || self.Token.AccessorID != global.AccessorID {
		t.Fatalf("token self in west: %+v, %v", self.Token, err)
	}
	// The bootstrap token is global: west's operators can use it too.
	if _, a, err := west.ResolveACL(root); err != nil || !a.IsManagement() {
		t.Fatalf("the bootstrap token in west: %v", err)
	}
	// The local token was written before the global one, so the list
	// that brought the global one would have held it: it is not there.
	if tok, _ := west.State().ACLTokenByAccessorID(nil, local.AccessorID); tok != nil {
		t.Fatal("a local token of east was replicated to west")
	}
	if _, _, err := west.ResolveACL(local.SecretID); err != ErrTokenNotFound {
		t.Fatalf("east's local token in west: %v, want %v", err, ErrTokenNotFound)
	}

	// Deleted upstream: gone in west.
	if err := east.RPC("ACL.DeletePolicies", &structs.ACLNamesRequest{Names: []string{"doomed"}, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the deleted policy gone from west", func() bool {
		p, _ := west.State().ACLPolicyByName(nil, "doomed")
		return p == nil
	})

	// Written in west: forwarded to east, then replicated back.
	if err := west.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "from-west", Rules: `operator { policy = "read" }`},
	}, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
		t.Fatalf("policy write in west: %v", err)
	}
	if p, _ := east.State().ACLPolicyByName(nil, "from-west"); p == nil {
		t.Fatal("a policy written in west did not land in east")
	}
	westGlobal := upsertTokens(t, west, root, &structs.ACLToken{Name: "made-in-west", Type: structs.ACLClientToken, Policies: []string{"readers"}, Global: true})[0]
	if tok, _ := east.State().ACLTokenByAccessorID(nil, westGlobal.AccessorID); tok == nil {
		t.Fatal("a global token created through west is not in east")
	}
	westLocal := upsertTokens(t, west, root, &structs.ACLToken{Name: "west-only", Type: structs.ACLClientToken, Policies: []string{"readers"}})[0]
	if tok, _ := east.State().ACLTokenByAccessorID(nil, westLocal.AccessorID); tok != nil {
		t.Fatal("a local token of west was written in east")
	}
	waitFor(t, 10*time.Second, "west's writes replicated back", func() bool {
		p, _ := west.State().ACLPolicyByName(nil, "from-west")
		tok, _ := west.State().ACLTokenByAccessorID(nil, westGlobal.AccessorID)
		return p != nil && tok != nil
	})
	if tok, _ := west.State().ACLTokenByAccessorID(nil, westLocal.AccessorID); tok == nil {
		t.Fatal("replication deleted a local token of west")
	}
	if _, _, err := west.ResolveACL(westLocal.SecretID); err != nil {
		t.Fatalf("west's local token in west: %v", err)
	}

	// Nothing failed, and an unchanged object is not written again.
	for _, st := range west.ACLReplication() {
		if st.LastError != "" || st.LastSuccess.IsZero() {
			t.Errorf("replication of %s: %+v", st.Kind, st)
		}
	}
	if n := len(west.ACLReplication()); n != 5 {
		t.Errorf("replication reports %d kinds, want 5", n)
	}
	before, _ := west.State().ACLPolicyByName(nil, "readers")
	if err := east.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "later", Rules: `node { policy = "read" }`},
	}, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the later policy in west", func() bool {
		p, _ := west.State().ACLPolicyByName(nil, "later")
		return p != nil
	})
	if after, _ := west.State().ACLPolicyByName(nil, "readers"); after.ModifyIndex != before.ModifyIndex {
		t.Errorf("an unchanged policy was rewritten: modify index %d -> %d", before.ModifyIndex, after.ModifyIndex)
	}
}
