package server

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// A replication token that is not a management token (a careless
// acl.replication_token) reads only part of the policies, roles,
// namespaces and node pools; replication must not take the rest for
// deleted upstream. West, which holds copies of everything, keeps them and
// reports the token in every kind's status.
func TestACLReplicationLesserTokenDeletesNothing(t *testing.T) {
	root := "5d2c1a8e-0f3b-4c6d-9e7a-2b1c0d9e8f7a"
	lesser := "0e0e0e0e-1111-4222-8333-444455556666"
	east := gossipServerIn(t, "e1", t.TempDir(), 1, "east", func(c *Config) { c.ACLEnabled = true })
	west := gossipServerIn(t, "w1", t.TempDir(), 1, "west", func(c *Config) {
		c.ACLEnabled = true
		c.AuthoritativeRegion = "east"
		c.ReplicationToken = lesser
	})
	waitFor(t, 10*time.Second, "both leaders", func() bool { return east.IsLeader() && west.IsLeader() })
	wr := structs.WriteRequest{AuthToken: root}
	if err := east.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{BootstrapSecret: root}, &structs.ACLTokenResponse{}); err != nil {
		t.Fatal(err)
	}
	policies := []*structs.ACLPolicy{
		{Name: "readers", Rules: `node { policy = "read" }`},
		{Name: "ops", Rules: `agent { policy = "read" }`},
	}
	if err := east.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: policies, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	ns := []*structs.Namespace{{Name: "team-a"}}
	if err := east.RPC("Namespace.UpsertNamespaces", &structs.NamespaceUpsertRequest{Namespaces: ns, WriteRequest: wr}, &structs.GenericResponse{}); err != nil {
		t.Fatal(err)
	}
	upsertTokens(t, east, root, &structs.ACLToken{AccessorID: "1e0e0e0e-1111-4222-8333-444455556666", SecretID: lesser,
		Name: "replicator", Type: structs.ACLClientToken, Policies: []string{"readers"}, Global: true})
	// West holds copies of all of it (as after replicating with a
	// management token before its token was changed).
	if _, _, err := west.raftApply(structs.ACLPolicyUpsertRequestType, &structs.ACLPolicyUpsertRequest{Policies: policies}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := west.raftApply(structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{Namespaces: ns}); err != nil {
		t.Fatal(err)
	}

	if _, err := west.Join([]string{serfAddr(east)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the lesser token reported for policies and namespaces", func() bool {
		n := 0
		for _, st := range west.ACLReplication() {
			if (st.Kind == "policies" || st.Kind == "namespaces") && strings.Contains(st.LastError, "not a management token") {
				n++
			}
		}
		return n == 2
	})
	if p, _ := west.State().ACLPolicyByName(nil, "ops"); p == nil {
		t.Fatal("west deleted the policy its replication token cannot read")
	}
	if n, _ := west.State().NamespaceByName(nil, "team-a"); n == nil {
		t.Fatal("west deleted the namespace its replication token cannot read")
	}
}

// A global token uploaded in the authoritative region with the accessor
// (or secret) ID of a token local to the replicating region does not
// replace that local token there (it did: the local token was lost); it is
// left out and reported in the tokens' status.
func TestACLReplicationGlobalTokenIDCollision(t *testing.T) {
	east, west, root := replicatedRegions(t)
	const accessor, secret = "2a2a2a2a-1111-4222-8333-444455556666", "3b3b3b3b-1111-4222-8333-444455556666"
	if err := east.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: "readers", Rules: `node { policy = "read" }`}},
		WriteRequest: structs.WriteRequest{AuthToken: root}}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the policy in west", func() bool { p, _ := west.State().ACLPolicyByName(nil, "readers"); return p != nil })
	// The management token authorizing the write through west is a global
	// token replicated on its own; the policy may arrive first.
	waitFor(t, 10*time.Second, "the management token in west", func() bool { tok, _ := west.State().ACLTokenBySecretID(nil, root); return tok != nil })
	upsertTokens(t, west, root, &structs.ACLToken{AccessorID: accessor, SecretID: secret, Name: "west-local", Type: structs.ACLClientToken, Policies: []string{"readers"}})
	upsertTokens(t, east, root,
		&structs.ACLToken{AccessorID: accessor, SecretID: "4c4c4c4c-1111-4222-8333-444455556666", Name: "same-accessor", Type: structs.ACLClientToken, Policies: []string{"readers"}, Global: true},
		&structs.ACLToken{AccessorID: "5d5d5d5d-1111-4222-8333-444455556666", SecretID: secret, Name: "same-secret", Type: structs.ACLClientToken, Policies: []string{"readers"}, Global: true},
		&structs.ACLToken{AccessorID: "6e6e6e6e-1111-4222-8333-444455556666", SecretID: "7f7f7f7f-1111-4222-8333-444455556666", Name: "fine", Type: structs.ACLClientToken, Policies: []string{"readers"}, Global: true})
	waitFor(t, 10*time.Second, "the global token without a collision in west", func() bool {
		tok, _ := west.State().ACLTokenByAccessorID(nil, "6e6e6e6e-1111-4222-8333-444455556666")
		return tok != nil
	})
	if tok, _ := west.State().ACLTokenByAccessorID(nil, accessor); tok == nil || tok.Global || tok.Name != "west-local" || tok.SecretID != secret {
		t.Fatalf("west's local token after replication: %+v", tok)
	}
	if tok, _ := west.State().ACLTokenBySecretID(nil, secret); tok == nil || tok.Name != "west-local" {
		t.Fatalf("west's local secret resolves to %+v", tok)
	}
	var kept []string
	waitFor(t, 10*time.Second, "both collisions in the tokens' status", func() bool {
		for _, st := range west.ACLReplication() {
			if st.Kind == "tokens" {
				kept = st.Kept
			}
		}
		all := strings.Join(kept, "|")
		return len(kept) == 2 && strings.Contains(all, "accessor ID is a local token's") && strings.Contains(all, "secret ID is a local token's")
	})
}
