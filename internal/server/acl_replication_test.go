package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/hashicorp/nomad/api"

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

	// Deleting tokens through west: global ones in east (then here by
	// replication), local ones here; not both in one request.
	err = west.RPC("ACL.DeleteTokens", &structs.ACLNamesRequest{Names: []string{westGlobal.AccessorID, westLocal.AccessorID}, WriteRequest: wr}, &structs.WriteMeta{})
	if code, _ := structs.ErrorCode(err); code != 400 {
		t.Fatalf("deleting a global and a local token at once: %v, want a 400", err)
	}
	if err := west.RPC("ACL.DeleteTokens", &structs.ACLNamesRequest{Names: []string{westGlobal.AccessorID}, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
		t.Fatalf("deleting a global token through west: %v", err)
	}
	if tok, _ := east.State().ACLTokenByAccessorID(nil, westGlobal.AccessorID); tok != nil {
		t.Fatal("a global token deleted through west is still in east")
	}
	waitFor(t, 10*time.Second, "the deleted global token gone from west", func() bool {
		tok, _ := west.State().ACLTokenByAccessorID(nil, westGlobal.AccessorID)
		return tok == nil
	})

	// Every kind replicates without error, and an unchanged object is not
	// written again. The kinds this test did not wait for may still be in
	// the backoff of the failures before east was bootstrapped (up to
	// replicationBackoffMax): their next round succeeds.
	waitFor(t, 10*time.Second, "all 7 kinds replicated without error", func() bool {
		all := west.ACLReplication()
		for _, st := range all {
			if st.LastError != "" || st.LastSuccess.IsZero() {
				return false
			}
		}
		return len(all) == 7
	})
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

	// The loops are parked in blocking queries on east: the end of the
	// leadership (here the shutdown) ends them at once, not when the
	// queries time out (after up to 5 minutes: 30 s tells the two apart
	// on a loaded machine too).
	start := time.Now()
	west.Shutdown()
	if d := time.Since(start); d > 30*time.Second || west.leaderTasks.Load() != 0 {
		t.Fatalf("west's shutdown took %s with %d leader loops left", d, west.leaderTasks.Load())
	}
}

// Roles, auth methods (with the OIDC client secret every read redacts) and
// binding rules replicate too, and a global token that reaches its policy
// through a role works in the other region.
func TestACLReplicationRolesAuthMethodsBindingRules(t *testing.T) {
	east, west, root := replicatedRegions(t)
	wr := structs.WriteRequest{AuthToken: root}
	if err := east.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "ops", Rules: `operator { policy = "read" }`},
	}, WriteRequest: wr}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	var roles structs.ACLRoleUpsertResponse
	if err := east.RPC("ACL.UpsertRoles", &structs.ACLRoleUpsertRequest{Roles: []*structs.ACLRole{
		{Name: "operators", Policies: []*structs.ACLRolePolicyLink{{Name: "ops"}}},
	}, WriteRequest: wr}, &roles); err != nil {
		t.Fatal(err)
	}
	if err := east.RPC("ACL.UpsertAuthMethods", &structs.ACLAuthMethodUpsertRequest{AuthMethods: []*structs.ACLAuthMethod{{
		Name: "sso", Type: "OIDC", TokenLocality: "global", MaxTokenTTL: time.Hour,
		Config: &api.ACLAuthMethodConfig{OIDCDiscoveryURL: "https://idp.example", OIDCClientID: "drover", OIDCClientSecret: "s3cret"},
	}}, WriteRequest: wr}, &structs.ACLAuthMethodUpsertResponse{}); err != nil {
		t.Fatal(err)
	}
	var rules structs.ACLBindingRuleUpsertResponse
	if err := east.RPC("ACL.UpsertBindingRules", &structs.ACLBindingRuleUpsertRequest{Rules: []*structs.ACLBindingRule{
		{AuthMethod: "sso", BindType: "role", BindName: "operators", Selector: `"ops" in list.groups`},
	}, WriteRequest: wr}, &rules); err != nil {
		t.Fatal(err)
	}
	tok := upsertTokens(t, east, root, &structs.ACLToken{Name: "via-role", Type: structs.ACLClientToken, Global: true,
		Roles: []*structs.ACLTokenRoleLink{{Name: "operators"}}})[0]

	waitFor(t, 10*time.Second, "policy, role, auth method, binding rule and token in west", func() bool {
		// Each kind replicates in its own rounds: the token can resolve
		// through its role only once the role's policy is here too.
		st := west.State()
		p, _ := st.ACLPolicyByName(nil, "ops")
		r, _ := st.ACLRoleByID(nil, roles.Roles[0].ID)
		m, _ := st.ACLAuthMethodByName(nil, "sso")
		b, _ := st.ACLBindingRuleByID(nil, rules.Rules[0].ID)
		k, _ := st.ACLTokenByAccessorID(nil, tok.AccessorID)
		return p != nil && r != nil && m != nil && b != nil && k != nil
	})
	m, _ := west.State().ACLAuthMethodByName(nil, "sso")
	if m.Config.OIDCClientSecret != "s3cret" || m.TokenLocality != "global" {
		t.Fatalf("west's copy of the auth method: secret %q, locality %q", m.Config.OIDCClientSecret, m.TokenLocality)
	}
	if _, a, err := west.ResolveACL(tok.SecretID); err != nil || !a.AllowOperatorRead() || a.AllowOperatorWrite() {
		t.Fatalf("a role-linked global token in west: %v", err)
	}

	// A round that finds every copy equal to the authoritative region's
	// writes nothing (the copies went through another decoding than the
	// answer did: times, empty lists and maps must still compare equal).
	q := structs.QueryOptions{Region: "east", AuthToken: root}
	last := west.raft.LastIndex()
	check := func(kind string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if now := west.raft.LastIndex(); now != last {
			t.Fatalf("an unchanged round of %s wrote to Raft (%d -> %d)", kind, last, now)
		}
	}
	p, _, err := west.policyKind().fetch(q)
	check("policies", errOr(err, func() error { _, err := applyReplicated(west, west.policyKind(), p); return err }))
	r, _, err := west.roleKind().fetch(q)
	check("roles", errOr(err, func() error { _, err := applyReplicated(west, west.roleKind(), r); return err }))
	m2, _, err := west.authMethodKind().fetch(q)
	check("auth methods", errOr(err, func() error { _, err := applyReplicated(west, west.authMethodKind(), m2); return err }))
	b, _, err := west.bindingRuleKind().fetch(q)
	check("binding rules", errOr(err, func() error { _, err := applyReplicated(west, west.bindingRuleKind(), b); return err }))
	k, _, err := west.globalTokenKind().fetch(q)
	check("tokens", errOr(err, func() error { _, err := applyReplicated(west, west.globalTokenKind(), k); return err }))
}

func errOr(err error, f func() error) error {
	if err != nil {
		return err
	}
	return f()
}

// A replication token the authoritative region does not know: nothing is
// mirrored, and the replication status says why.
func TestACLReplicationBadTokenReported(t *testing.T) {
	root := "5d2c1a8e-0f3b-4c6d-9e7a-2b1c0d9e8f7a"
	east := gossipServerIn(t, "e1", t.TempDir(), 1, "east", func(c *Config) { c.ACLEnabled = true })
	west := gossipServerIn(t, "w1", t.TempDir(), 1, "west", func(c *Config) {
		c.ACLEnabled = true
		c.AuthoritativeRegion = "east"
		c.ReplicationToken = "0e0e0e0e-1111-4222-8333-444455556666"
	})
	waitFor(t, 10*time.Second, "both leaders", func() bool { return east.IsLeader() && west.IsLeader() })
	if _, err := west.Join([]string{serfAddr(east)}); err != nil {
		t.Fatal(err)
	}
	if err := east.RPC("ACL.Bootstrap", &structs.ACLTokenBootstrapRequest{BootstrapSecret: root}, &structs.ACLTokenResponse{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the refused token in the replication status", func() bool {
		for _, st := range west.ACLReplication() {
			if st.Kind == "policies" && strings.Contains(st.LastError, "ACL token not found") {
				return true
			}
		}
		return false
	})
	if tok, _ := west.State().ACLTokenBySecretID(nil, root); tok != nil {
		t.Fatal("replicated with a token east does not know")
	}
}

// Expired global tokens are collected by the authoritative region only
// (replication then removes the copies): a replicating region's collector
// leaves them alone, or replication would write them back every round. Its
// own local tokens it collects as before.
func TestACLReplicationExpiredGlobalTokensLeftToAuthority(t *testing.T) {
	east, west, root := replicatedRegions(t)
	global := upsertTokens(t, east, root, &structs.ACLToken{Name: "g", Type: structs.ACLManagementToken, Global: true, ExpirationTTL: time.Hour})[0]
	local := upsertTokens(t, west, bootstrapIn(t, west, root), &structs.ACLToken{Name: "l", Type: structs.ACLManagementToken, ExpirationTTL: time.Hour})[0]
	waitFor(t, 10*time.Second, "the global token in west", func() bool {
		tok, _ := west.State().ACLTokenByAccessorID(nil, global.AccessorID)
		return tok != nil
	})
	if err := west.gcExpiredACL(time.Now().Add(2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if tok, _ := west.State().ACLTokenByAccessorID(nil, local.AccessorID); tok != nil {
		t.Fatal("west did not collect its own expired local token")
	}
	if tok, _ := west.State().ACLTokenByAccessorID(nil, global.AccessorID); tok == nil {
		t.Fatal("west collected a global token (east's to collect)")
	}
	if err := east.gcExpiredACL(time.Now().Add(2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the token east collected gone from west", func() bool {
		tok, _ := west.State().ACLTokenByAccessorID(nil, global.AccessorID)
		return tok == nil
	})
}

// bootstrapIn waits until the bootstrap token has reached s and returns it.
func bootstrapIn(t *testing.T, s *Server, root string) string {
	t.Helper()
	waitFor(t, 10*time.Second, "the bootstrap token in "+s.Region(), func() bool {
		tok, _ := s.State().ACLTokenBySecretID(nil, root)
		return tok != nil
	})
	return root
}

// A JWT login in the replicating region to a method that makes global
// tokens makes the token in the authoritative region (from where it comes
// back); to a local method, in the region logged in to.
func TestACLReplicationLogin(t *testing.T) {
	east, west, root := replicatedRegions(t)
	wr := structs.WriteRequest{AuthToken: root}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	pubPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	var methods []*structs.ACLAuthMethod
	for _, loc := range []string{"global", "local"} {
		methods = append(methods, &structs.ACLAuthMethod{Name: "ci-" + loc, Type: "JWT", TokenLocality: loc, MaxTokenTTL: time.Hour,
			Config: &api.ACLAuthMethodConfig{JWTValidationPubKeys: []string{pubPEM}, BoundAudiences: []string{"drover"}}})
	}
	if err := east.RPC("ACL.UpsertAuthMethods", &structs.ACLAuthMethodUpsertRequest{AuthMethods: methods, WriteRequest: wr}, &structs.ACLAuthMethodUpsertResponse{}); err != nil {
		t.Fatal(err)
	}
	var rules []*structs.ACLBindingRule
	for _, m := range methods {
		rules = append(rules, &structs.ACLBindingRule{AuthMethod: m.Name, BindType: "management"})
	}
	if err := east.RPC("ACL.UpsertBindingRules", &structs.ACLBindingRuleUpsertRequest{Rules: rules, WriteRequest: wr}, &structs.ACLBindingRuleUpsertResponse{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "methods and rules in west", func() bool {
		// Methods and rules replicate in separate rounds: either may
		// arrive first.
		r, _ := west.State().ACLBindingRules(nil)
		m, _ := west.State().ACLAuthMethods(nil)
		return len(r) == 2 && len(m) == 2
	})
	now := time.Now()
	claims := jwt.Claims{Audience: jwt.Audience{"drover"}, Expiry: jwt.NewNumericDate(now.Add(time.Minute)), IssuedAt: jwt.NewNumericDate(now)}
	login := func(method string) *structs.ACLToken {
		t.Helper()
		var reply structs.ACLTokenResponse
		if err := west.RPC("ACL.Login", &structs.ACLLoginRequest{AuthMethodName: method, LoginToken: signJWT(t, key, claims, nil)}, &reply); err != nil {
			t.Fatalf("login to %s in west: %v", method, err)
		}
		return reply.Token
	}
	g := login("ci-global")
	if tok, _ := east.State().ACLTokenByAccessorID(nil, g.AccessorID); tok == nil || !tok.Global {
		t.Fatalf("the global login's token in east: %+v", tok)
	}
	l := login("ci-local")
	if tok, _ := east.State().ACLTokenByAccessorID(nil, l.AccessorID); tok != nil {
		t.Fatal("a local login's token was made in east")
	}
	waitFor(t, 10*time.Second, "the global login's token in west", func() bool {
		tok, _ := west.State().ACLTokenByAccessorID(nil, g.AccessorID)
		return tok != nil
	})
	if _, a, err := west.ResolveACL(l.SecretID); err != nil || !a.IsManagement() {
		t.Fatalf("the local login's token in west: %v", err)
	}
}

// The replication loop is one of the leadership's loops: it runs once per
// term, only in the replicating region, and a restarted leadership (as
// after a snapshot restore) ends the old loop before the new one starts,
// which replicates again.
func TestACLReplicationLoopPerTerm(t *testing.T) {
	east, west, root := replicatedRegions(t)
	bootstrapIn(t, west, root)
	// east: the fixed loops and gossip's; west: one more.
	waitFor(t, 5*time.Second, "leader loops counted", func() bool {
		return east.leaderTasks.Load() == leaderLoopTasks+1 && west.leaderTasks.Load() == leaderLoopTasks+2
	})
	before := west.establishCount.Load()
	west.reassertCh <- struct{}{}
	waitFor(t, 10*time.Second, "west's leadership restarted", func() bool {
		return west.establishCount.Load() == before+1 && west.IsLeader()
	})
	if n := west.leaderTasks.Load(); n != leaderLoopTasks+2 {
		t.Fatalf("west runs %d leader loops after the restart, want %d", n, leaderLoopTasks+2)
	}
	if err := east.RPC("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{
		{Name: "after-restart", Rules: `node { policy = "read" }`},
	}, WriteRequest: structs.WriteRequest{AuthToken: root}}, &structs.WriteMeta{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the policy in west after the restart", func() bool {
		p, _ := west.State().ACLPolicyByName(nil, "after-restart")
		return p != nil
	})
}
