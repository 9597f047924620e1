package server

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/oidctest"
	"github.com/drover-project/drover/internal/structs"
)

func TestACLOIDCLogin(t *testing.T) {
	s, root := aclServer(t)
	is := oidctest.New(t, "drover-ui", "s3cret")
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
		Config: &api.ACLAuthMethodConfig{OIDCDiscoveryURL: is.URL, OIDCClientID: "drover-ui", OIDCClientSecret: "s3cret",
			AllowedRedirectURIs: []string{"http://localhost:4649/oidc/callback"}, OIDCEnablePKCE: true,
			ListClaimMappings: map[string]string{"groups": "groups"}},
	}}, WriteRequest: wr}, &structs.ACLAuthMethodUpsertResponse{})
	must("ACL.UpsertBindingRules", &structs.ACLBindingRuleUpsertRequest{Rules: []*structs.ACLBindingRule{{
		AuthMethod: "sso", Selector: `"ops" in list.groups`, BindType: "policy", BindName: "ops"}}, WriteRequest: wr}, &structs.ACLBindingRuleUpsertResponse{})

	login := func(group string) (*structs.ACLToken, error) {
		is.SetClaims("alice", map[string]any{"groups": []string{group}})
		var u structs.ACLOIDCAuthURLResponse
		must("ACL.OIDCAuthURL", &structs.ACLOIDCAuthURLRequest{AuthMethodName: "sso", RedirectURI: "http://localhost:4649/oidc/callback", ClientNonce: "cn"}, &u)
		pu, err := url.Parse(u.AuthURL)
		if err != nil || !strings.HasPrefix(u.AuthURL, is.URL+"/authorize") || pu.Query().Get("client_id") != "drover-ui" || pu.Query().Get("code_challenge") == "" {
			t.Fatalf("auth URL %q", u.AuthURL)
		}
		cb, err := is.Authorize(u.AuthURL)
		if err != nil || cb.Query().Get("code") == "" || cb.Query().Get("state") != pu.Query().Get("state") {
			t.Fatalf("authorize: %v %v", cb, err)
		}
		var reply structs.ACLTokenResponse
		err = s.RPC("ACL.OIDCCompleteAuth", &structs.ACLOIDCCompleteAuthRequest{AuthMethodName: "sso", ClientNonce: "cn",
			State: cb.Query().Get("state"), Code: cb.Query().Get("code"), RedirectURI: "http://localhost:4649/oidc/callback"}, &reply)
		return reply.Token, err
	}
	tok, err := login("ops")
	if err != nil || tok == nil || len(tok.Policies) != 1 || tok.Policies[0] != "ops" || !tok.Global {
		t.Fatalf("OIDC login: %+v %v", tok, err)
	}
	if err := s.authorize(tok.SecretID, func(a *acl.ACL) bool { return a.AllowNodeWrite() }); err != nil {
		t.Fatalf("the OIDC token cannot write nodes: %v", err)
	}
	// The client secret is never read back; writing the read-back method
	// again keeps it (the provider refuses a wrong secret).
	var got structs.ACLAuthMethodResponse
	must("ACL.GetAuthMethod", &structs.ACLGetRequest{Name: "sso", QueryOptions: structs.QueryOptions{AuthToken: root}}, &got)
	if got.AuthMethod == nil || got.AuthMethod.Config.OIDCClientSecret != "redacted" || got.AuthMethod.Config.OIDCClientID != "drover-ui" {
		t.Fatalf("read back: %+v", got.AuthMethod)
	}
	var list structs.ACLAuthMethodListResponse
	must("ACL.ListAuthMethods", &structs.ACLGetRequest{QueryOptions: structs.QueryOptions{AuthToken: root}}, &list)
	if len(list.AuthMethods) != 1 || list.AuthMethods[0].Config.OIDCClientSecret != "redacted" {
		t.Fatalf("listed: %+v", list.AuthMethods)
	}
	var up structs.ACLAuthMethodUpsertResponse
	got.AuthMethod.MaxTokenTTL = 2 * time.Hour
	must("ACL.UpsertAuthMethods", &structs.ACLAuthMethodUpsertRequest{AuthMethods: []*structs.ACLAuthMethod{got.AuthMethod}, WriteRequest: wr}, &up)
	if len(up.AuthMethods) != 1 || up.AuthMethods[0].Config.OIDCClientSecret != "redacted" || up.AuthMethods[0].MaxTokenTTL != 2*time.Hour {
		t.Fatalf("upsert reply: %+v", up.AuthMethods)
	}
	if tok, err := login("ops"); err != nil || tok == nil {
		t.Fatalf("login after writing the read-back method (secret lost?): %v", err)
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
