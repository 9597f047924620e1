package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/structs"
)

// testIssuer is a minimal OIDC provider: discovery, JWKS and a token
// endpoint that trades the one code it knows for an ID token carrying the
// nonce of the authorization request.
type testIssuer struct {
	srv   *httptest.Server
	key   *ecdsa.PrivateKey
	mu    sync.Mutex
	nonce string
	code  string
	group string
}

func newTestIssuer(t *testing.T) *testIssuer {
	is := &testIssuer{}
	is.key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	mux := http.NewServeMux()
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.srv.URL, "authorization_endpoint": is.srv.URL + "/authorize",
			"token_endpoint": is.srv.URL + "/token", "jwks_uri": is.srv.URL + "/jwks", "id_token_signing_alg_values_supported": []string{"ES256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &is.key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		is.mu.Lock()
		defer is.mu.Unlock()
		if r.Form.Get("code") != is.code || is.code == "" {
			w.WriteHeader(400)
			json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant"})
			return
		}
		is.code = ""
		signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: is.key}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
		now := time.Now()
		idt, _ := jwt.Signed(signer).Claims(jwt.Claims{Issuer: is.srv.URL, Subject: "alice", Audience: jwt.Audience{"drover-ui"},
			Expiry: jwt.NewNumericDate(now.Add(time.Minute)), IssuedAt: jwt.NewNumericDate(now)}).
			Claims(map[string]any{"nonce": is.nonce, "groups": []string{is.group}}).Serialize()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": 60, "id_token": idt})
	})
	return is
}

func TestACLOIDCLogin(t *testing.T) {
	s, root := aclServer(t)
	is := newTestIssuer(t)
	wr := structs.WriteRequest{AuthToken: root}
	must := func(method string, args, reply any) {
		t.Helper()
		if err := s.RPC(method, args, reply); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
	}
	must("ACL.UpsertPolicies", &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: "ops", Rules: `node { policy = "write" }`}}, WriteRequest: wr}, &structs.WriteMeta{})
	must("ACL.UpsertAuthMethods", &structs.ACLAuthMethodUpsertRequest{AuthMethods: []*structs.ACLAuthMethod{{
		Name: "sso", Type: "OIDC", TokenLocality: "global", MaxTokenTTL: time.Hour,
		Config: &api.ACLAuthMethodConfig{OIDCDiscoveryURL: is.srv.URL, OIDCClientID: "drover-ui", OIDCClientSecret: "s3cret",
			AllowedRedirectURIs: []string{"http://localhost:4649/oidc/callback"}, OIDCEnablePKCE: true,
			ListClaimMappings: map[string]string{"groups": "groups"}},
	}}, WriteRequest: wr}, &structs.ACLAuthMethodUpsertResponse{})
	must("ACL.UpsertBindingRules", &structs.ACLBindingRuleUpsertRequest{Rules: []*structs.ACLBindingRule{{
		AuthMethod: "sso", Selector: `"ops" in list.groups`, BindType: "policy", BindName: "ops"}}, WriteRequest: wr}, &structs.ACLBindingRuleUpsertResponse{})

	login := func(group string) (*structs.ACLToken, error) {
		var u structs.ACLOIDCAuthURLResponse
		must("ACL.OIDCAuthURL", &structs.ACLOIDCAuthURLRequest{AuthMethodName: "sso", RedirectURI: "http://localhost:4649/oidc/callback", ClientNonce: "cn"}, &u)
		pu, err := url.Parse(u.AuthURL)
		if err != nil || !strings.HasPrefix(u.AuthURL, is.srv.URL+"/authorize") || pu.Query().Get("client_id") != "drover-ui" || pu.Query().Get("code_challenge") == "" {
			t.Fatalf("auth URL %q", u.AuthURL)
		}
		is.mu.Lock()
		is.nonce, is.code, is.group = pu.Query().Get("nonce"), "code-1", group
		is.mu.Unlock()
		var reply structs.ACLTokenResponse
		err = s.RPC("ACL.OIDCCompleteAuth", &structs.ACLOIDCCompleteAuthRequest{AuthMethodName: "sso", ClientNonce: "cn",
			State: pu.Query().Get("state"), Code: "code-1", RedirectURI: "http://localhost:4649/oidc/callback"}, &reply)
		return reply.Token, err
	}
	tok, err := login("ops")
	if err != nil || tok == nil || len(tok.Policies) != 1 || tok.Policies[0] != "ops" || !tok.Global {
		t.Fatalf("OIDC login: %+v %v", tok, err)
	}
	if err := s.authorize(tok.SecretID, func(a *acl.ACL) bool { return a.AllowNodeWrite() }); err != nil {
		t.Fatalf("the OIDC token cannot write nodes: %v", err)
	}
	if _, err := login("dev"); err == nil || !strings.Contains(err.Error(), "no role or policy bindings matched") {
		t.Fatalf("login outside the bound group: %v", err)
	}
	// A state is used once.
	err = s.RPC("ACL.OIDCCompleteAuth", &structs.ACLOIDCCompleteAuthRequest{AuthMethodName: "sso", ClientNonce: "cn", State: "forged", Code: "x",
		RedirectURI: "http://localhost:4649/oidc/callback"}, &structs.ACLTokenResponse{})
	if err == nil || !strings.Contains(err.Error(), "unknown or expired OIDC login state") {
		t.Fatalf("forged state: %v", err)
	}
	err = s.RPC("ACL.OIDCAuthURL", &structs.ACLOIDCAuthURLRequest{AuthMethodName: "sso", RedirectURI: "http://evil/cb", ClientNonce: "cn"}, &structs.ACLOIDCAuthURLResponse{})
	if err == nil || !strings.Contains(err.Error(), "AllowedRedirectURIs") {
		t.Fatalf("unlisted redirect: %v", err)
	}
}
