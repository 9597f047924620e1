package server

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/oidctest"
	"github.com/drover-project/drover/internal/structs"
)

// JWT logins against every way a JWT auth method may name its keys (the
// JWKS of an OIDC discovery document, over HTTP or HTTPS with
// DiscoveryCaPem; a JWKS URL over HTTPS with JWKSCACert), and hostile
// login requests: each refused with a 4xx naming what is wrong.
func TestACLLoginJWTHostile(t *testing.T) {
	s, root := aclServer(t)
	wr := structs.WriteRequest{AuthToken: root}
	plain := oidctest.New(t, "unused", "unused")
	secure := oidctest.NewTLS(t, "unused", "unused")
	must := func(method string, args, reply any) {
		t.Helper()
		if err := s.RPC(method, args, reply); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
	must("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: "ops", Rules: `node { policy = "read" }`}}, WriteRequest: wr}, &structs.WriteMeta{})
	methods := map[string]*api.ACLAuthMethodConfig{
		"discovery":      {OIDCDiscoveryURL: plain.URL},
		"discovery-tls":  {OIDCDiscoveryURL: secure.URL, DiscoveryCaPem: []string{secure.CertPEM()}},
		"jwks-tls":       {JWKSURL: secure.URL + "/jwks", JWKSCACert: secure.CertPEM()},
		"jwks-untrusted": {JWKSURL: secure.URL + "/jwks"},
	}
	for name, cfg := range methods {
		must("ACL.UpsertAuthMethods", &structs.ACLAuthMethodUpsertRequest{AuthMethods: []*structs.ACLAuthMethod{{
			Name: name, Type: "JWT", TokenLocality: "local", MaxTokenTTL: time.Hour, Config: cfg}}, WriteRequest: wr}, &structs.ACLAuthMethodUpsertResponse{})
		must("ACL.UpsertBindingRules", &structs.ACLBindingRuleUpsertRequest{Rules: []*structs.ACLBindingRule{{
			AuthMethod: name, BindType: "policy", BindName: "ops"}}, WriteRequest: wr}, &structs.ACLBindingRuleUpsertResponse{})
	}
	must("ACL.UpsertAuthMethods", &structs.ACLAuthMethodUpsertRequest{AuthMethods: []*structs.ACLAuthMethod{{
		Name: "sso", Type: "OIDC", TokenLocality: "local", MaxTokenTTL: time.Hour,
		Config: &api.ACLAuthMethodConfig{OIDCDiscoveryURL: plain.URL, OIDCClientID: "unused"}}}, WriteRequest: wr}, &structs.ACLAuthMethodUpsertResponse{})

	// A method whose PEM could never verify a login is refused when written.
	for field, cfg := range map[string]*api.ACLAuthMethodConfig{
		"DiscoveryCaPem":       {OIDCDiscoveryURL: secure.URL, DiscoveryCaPem: []string{"not a certificate"}},
		"JWKSCACert":           {JWKSURL: secure.URL + "/jwks", JWKSCACert: "not a certificate"},
		"JWTValidationPubKeys": {JWTValidationPubKeys: []string{"not a key"}},
	} {
		err := s.RPC("ACL.UpsertAuthMethods", &structs.ACLAuthMethodUpsertRequest{AuthMethods: []*structs.ACLAuthMethod{{
			Name: "bad", Type: "JWT", TokenLocality: "local", MaxTokenTTL: time.Hour, Config: cfg}}, WriteRequest: wr}, &structs.ACLAuthMethodUpsertResponse{})
		if errCode(err) != 400 || !strings.Contains(err.Error(), field) {
			t.Errorf("a method with a bad %s: %v, want 400 naming it", field, err)
		}
	}

	claims := func(is *oidctest.Issuer) map[string]any {
		now := time.Now()
		return map[string]any{"iss": is.URL, "sub": "ci", "iat": now.Unix(), "exp": now.Add(time.Minute).Unix()}
	}
	for _, name := range []string{"discovery", "discovery-tls"} {
		is := plain
		if name != "discovery" {
			is = secure
		}
		var reply structs.ACLTokenResponse
		if err := s.RPC("ACL.Login", &structs.ACLLoginRequest{AuthMethodName: name, LoginToken: is.SignJWT(t, claims(is))}, &reply); err != nil || reply.Token == nil {
			t.Errorf("login through method %s: %v", name, err)
		}
	}
	var reply structs.ACLTokenResponse
	if err := s.RPC("ACL.Login", &structs.ACLLoginRequest{AuthMethodName: "jwks-tls", LoginToken: secure.SignJWT(t, claims(secure))}, &reply); err != nil || reply.Token == nil {
		t.Errorf("login through a JWKS URL trusting JWKSCACert: %v", err)
	}

	expired := claims(plain)
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	for _, c := range []struct {
		name string
		req  structs.ACLLoginRequest
		code int
		want string
	}{
		{"empty", structs.ACLLoginRequest{}, 400, "missing auth method name"},
		{"no token", structs.ACLLoginRequest{AuthMethodName: "discovery"}, 400, "missing login token"},
		{"unknown method", structs.ACLLoginRequest{AuthMethodName: "nope", LoginToken: "x"}, 404, `auth-method "nope" not found`},
		{"OIDC method", structs.ACLLoginRequest{AuthMethodName: "sso", LoginToken: "x"}, 400, "takes JWT methods"},
		{"garbage token", structs.ACLLoginRequest{AuthMethodName: "discovery", LoginToken: "garbage"}, 403, "failed to validate login token"},
		{"huge token", structs.ACLLoginRequest{AuthMethodName: "discovery", LoginToken: strings.Repeat("a.", 1<<19)}, 403, "failed to validate login token"},
		{"other signer", structs.ACLLoginRequest{AuthMethodName: "discovery", LoginToken: secure.SignJWT(t, claims(secure))}, 403, "verifies the token's signature"},
		{"expired", structs.ACLLoginRequest{AuthMethodName: "discovery", LoginToken: plain.SignJWT(t, expired)}, 403, "expired"},
		{"untrusted JWKS", structs.ACLLoginRequest{AuthMethodName: "jwks-untrusted", LoginToken: secure.SignJWT(t, claims(secure))}, 403, "fetching JWKS"},
	} {
		err := s.RPC("ACL.Login", &c.req, &structs.ACLTokenResponse{})
		if errCode(err) != c.code || !strings.Contains(err.Error(), c.want) {
			t.Errorf("login %s: %v, want %d %q", c.name, err, c.code, c.want)
		}
	}
}
