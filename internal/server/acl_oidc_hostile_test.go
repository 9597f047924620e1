package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/oidctest"
	"github.com/drover-project/drover/internal/structs"
)

// Hostile and careless inputs to both steps of an OIDC login: each is
// refused with a 4xx naming the field, and a refused completion does not
// use up the login in progress (the user may send it again, fixed).
func TestACLOIDCHostileInputs(t *testing.T) {
	s, root := aclServer(t)
	is := oidctest.New(t, "drover-ui", "s3cret")
	wr := structs.WriteRequest{AuthToken: root}
	const cb = "http://localhost:4649/oidc/callback"
	must := func(method string, args, reply any) {
		t.Helper()
		if err := s.RPC(method, args, reply); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
	must("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: "ops", Rules: `node { policy = "write" }`}}, WriteRequest: wr}, &structs.WriteMeta{})
	must("ACL.UpsertAuthMethods", &structs.ACLAuthMethodUpsertRequest{AuthMethods: []*structs.ACLAuthMethod{{
		Name: "sso", Type: "OIDC", TokenLocality: "local", MaxTokenTTL: time.Hour,
		Config: &api.ACLAuthMethodConfig{OIDCDiscoveryURL: is.URL, OIDCClientID: "drover-ui", OIDCClientSecret: "s3cret",
			AllowedRedirectURIs: []string{cb}},
	}, {
		Name: "jwt", Type: "JWT", TokenLocality: "local", MaxTokenTTL: time.Hour,
		Config: &api.ACLAuthMethodConfig{JWKSURL: is.URL + "/jwks"},
	}}, WriteRequest: wr}, &structs.ACLAuthMethodUpsertResponse{})
	must("ACL.UpsertBindingRules", &structs.ACLBindingRuleUpsertRequest{Rules: []*structs.ACLBindingRule{{
		AuthMethod: "sso", BindType: "policy", BindName: "ops"}}, WriteRequest: wr}, &structs.ACLBindingRuleUpsertResponse{})

	authURL := []struct {
		name string
		req  structs.ACLOIDCAuthURLRequest
		code int
		want string
	}{
		{"empty", structs.ACLOIDCAuthURLRequest{}, 400, "missing auth method name"},
		{"no nonce", structs.ACLOIDCAuthURLRequest{AuthMethodName: "sso", RedirectURI: cb}, 400, "missing client nonce"},
		{"huge nonce", structs.ACLOIDCAuthURLRequest{AuthMethodName: "sso", RedirectURI: cb, ClientNonce: strings.Repeat("n", 1<<20)}, 400, "client nonce is too long"},
		{"no redirect", structs.ACLOIDCAuthURLRequest{AuthMethodName: "sso", ClientNonce: "cn"}, 400, "missing redirect URI"},
		{"unlisted redirect", structs.ACLOIDCAuthURLRequest{AuthMethodName: "sso", ClientNonce: "cn", RedirectURI: "http://evil/cb"}, 400, "AllowedRedirectURIs"},
		{"unknown method", structs.ACLOIDCAuthURLRequest{AuthMethodName: "nope", ClientNonce: "cn", RedirectURI: cb}, 404, `auth-method "nope" not found`},
		{"JWT method", structs.ACLOIDCAuthURLRequest{AuthMethodName: "jwt", ClientNonce: "cn", RedirectURI: cb}, 400, "not OIDC"},
	}
	for _, c := range authURL {
		err := s.RPC("ACL.OIDCAuthURL", &c.req, &structs.ACLOIDCAuthURLResponse{})
		if err == nil || errCode(err) != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("auth-url %s: %v (code %d), want %d %q", c.name, err, errCode(err), c.code, c.want)
		}
	}

	// A login in progress.
	var u structs.ACLOIDCAuthURLResponse
	must("ACL.OIDCAuthURL", &structs.ACLOIDCAuthURLRequest{AuthMethodName: "sso", RedirectURI: cb, ClientNonce: "cn"}, &u)
	back, err := is.Authorize(u.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	state, code := back.Query().Get("state"), back.Query().Get("code")
	good := structs.ACLOIDCCompleteAuthRequest{AuthMethodName: "sso", ClientNonce: "cn", State: state, Code: code, RedirectURI: cb}
	with := func(f func(r *structs.ACLOIDCCompleteAuthRequest)) structs.ACLOIDCCompleteAuthRequest {
		r := good
		f(&r)
		return r
	}
	complete := []struct {
		name string
		req  structs.ACLOIDCCompleteAuthRequest
		want string
	}{
		{"empty", structs.ACLOIDCCompleteAuthRequest{}, "missing auth method name"},
		{"no method", with(func(r *structs.ACLOIDCCompleteAuthRequest) { r.AuthMethodName = "" }), "missing auth method name"},
		{"no nonce", with(func(r *structs.ACLOIDCCompleteAuthRequest) { r.ClientNonce = "" }), "missing client nonce"},
		{"huge nonce", with(func(r *structs.ACLOIDCCompleteAuthRequest) { r.ClientNonce = strings.Repeat("n", 1<<20) }), "client nonce is too long"},
		{"no redirect", with(func(r *structs.ACLOIDCCompleteAuthRequest) { r.RedirectURI = "" }), "missing redirect URI"},
		{"no state", with(func(r *structs.ACLOIDCCompleteAuthRequest) { r.State = "" }), "missing state"},
		{"no code", with(func(r *structs.ACLOIDCCompleteAuthRequest) { r.Code = "" }), "missing code"},
		{"forged state", with(func(r *structs.ACLOIDCCompleteAuthRequest) { r.State = "forged" }), "unknown or expired OIDC login state"},
	}
	for _, c := range complete {
		err := s.RPC("ACL.OIDCCompleteAuth", &c.req, &structs.ACLTokenResponse{})
		if err == nil || errCode(err) != 400 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("complete-auth %s: %v (code %d), want 400 %q", c.name, err, errCode(err), c.want)
		}
	}
	// None of those used up the login; it completes once.
	var reply structs.ACLTokenResponse
	if err := s.RPC("ACL.OIDCCompleteAuth", &good, &reply); err != nil || reply.Token == nil {
		t.Fatalf("the login after refused completions: %v", err)
	}
	if err := s.RPC("ACL.OIDCCompleteAuth", &good, &structs.ACLTokenResponse{}); err == nil || !strings.Contains(err.Error(), "unknown or expired OIDC login state") {
		t.Fatalf("replayed completion: %v, want unknown or expired state", err)
	}
	// A completion with another nonce than the one that started the
	// login (a stolen callback) is refused and ends that login.
	must("ACL.OIDCAuthURL", &structs.ACLOIDCAuthURLRequest{AuthMethodName: "sso", RedirectURI: cb, ClientNonce: "cn"}, &u)
	if back, err = is.Authorize(u.AuthURL); err != nil {
		t.Fatal(err)
	}
	stolen := structs.ACLOIDCCompleteAuthRequest{AuthMethodName: "sso", ClientNonce: "attacker", State: back.Query().Get("state"),
		Code: back.Query().Get("code"), RedirectURI: cb}
	if err := s.RPC("ACL.OIDCCompleteAuth", &stolen, &structs.ACLTokenResponse{}); err == nil || errCode(err) != 400 {
		t.Fatalf("completion with another client nonce: %v, want 400", err)
	}
}

// Anyone may start an OIDC login, so the logins a server holds are
// bounded: past oidcMaxPending the next is refused (429) until some
// complete or expire.
func TestOIDCPendingBounded(t *testing.T) {
	var p oidcPending
	l := oidcLogin{method: "sso", expires: time.Now().Add(time.Minute)}
	for i := 0; i < oidcMaxPending; i++ {
		if err := p.put(fmt.Sprint("state-", i), l); err != nil {
			t.Fatalf("login %d refused: %v", i, err)
		}
	}
	err := p.put("one-more", l)
	if err == nil || errCode(err) != 429 || !strings.Contains(err.Error(), "too many OIDC logins in progress") {
		t.Fatalf("login past the bound: %v, want 429", err)
	}
	// An expired login frees its place.
	p.mu.Lock()
	for k, v := range p.m {
		v.expires = time.Now().Add(-time.Second)
		p.m[k] = v
		break
	}
	p.mu.Unlock()
	if err := p.put("one-more", l); err != nil {
		t.Fatalf("login after one expired: %v", err)
	}
}

// errCode is the HTTP status err maps to (0 for nil).
func errCode(err error) int {
	if err == nil {
		return 0
	}
	c, _ := structs.ErrorCode(err)
	return c
}
