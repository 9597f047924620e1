package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// aclTranscriptRequests are requests to every /v1/acl/* route: each method,
// path mismatches, missing names, bad bodies and blocking-query parameters.
var aclTranscriptRequests = []struct{ method, path, body string }{
	{"PUT", "/v1/acl/bootstrap", ""},
	{"GET", "/v1/acl/bootstrap", ""},
	{"GET", "/v1/acl/policies?index=3&wait=2s&stale", ""},
	{"PUT", "/v1/acl/policies", ""},
	{"GET", "/v1/acl/policy/p1?index=4", ""},
	{"GET", "/v1/acl/policy/self", ""},
	{"GET", "/v1/acl/policy/", ""},
	{"GET", "/v1/acl/policy/a/b", ""},
	{"PUT", "/v1/acl/policy/p1", `{"Name":"p1","Description":"d","Rules":"node { policy = \"read\" }"}`},
	{"POST", "/v1/acl/policy/p1", `{"Description":"no name"}`},
	{"PUT", "/v1/acl/policy/p1", `{"Name":"p2"}`},
	{"PUT", "/v1/acl/policy/p1", ``},
	{"PUT", "/v1/acl/policy/p1", `{"Name":`},
	{"DELETE", "/v1/acl/policy/p1", ""},
	{"PATCH", "/v1/acl/policy/p1", ""},
	{"GET", "/v1/acl/tokens?prefix=ab&filter=Name%20%3D%3D%20%22x%22", ""},
	{"DELETE", "/v1/acl/tokens", ""},
	{"PUT", "/v1/acl/token", `{"Name":"t","Type":"client","Policies":["p1"],"Roles":[{"Name":"r1"},null]}`},
	{"GET", "/v1/acl/token", ""},
	{"PUT", "/v1/acl/token", ``},
	{"GET", "/v1/acl/token/", ""},
	{"GET", "/v1/acl/token/t1?index=5&wait=1s", ""},
	{"GET", "/v1/acl/token/self", ""},
	{"PUT", "/v1/acl/token/self", `{"Name":"x"}`},
	{"DELETE", "/v1/acl/token/self", ""},
	{"PUT", "/v1/acl/token/t1", `{"AccessorID":"t2","Type":"client"}`},
	{"PUT", "/v1/acl/token/t1", `{"Name":"renamed","Type":"client","Global":true}`},
	{"DELETE", "/v1/acl/token/t1", ""},
	{"PATCH", "/v1/acl/token/t1", ""},
	{"GET", "/v1/acl/token/a/b", ""},
	{"PUT", "/v1/acl/token/onetime", ""},
	{"GET", "/v1/acl/token/onetime", ""},
	{"PUT", "/v1/acl/token/onetime/exchange", `{"OneTimeSecretID":"x"}`},
	{"GET", "/v1/acl/token/onetime/exchange", ""},
	{"GET", "/v1/acl/roles?index=6", ""},
	{"PUT", "/v1/acl/roles", ""},
	{"PUT", "/v1/acl/role", `{"Name":"r1","Description":"d","Policies":[{"Name":"p1"},null]}`},
	{"GET", "/v1/acl/role", ""},
	{"GET", "/v1/acl/role/r1?index=7", ""},
	{"GET", "/v1/acl/role/name/r1?wait=1s", ""},
	{"PUT", "/v1/acl/role/name/r1", `{"Name":"r1"}`},
	{"GET", "/v1/acl/role/name/", ""},
	{"GET", "/v1/acl/role/", ""},
	{"GET", "/v1/acl/role/a/b", ""},
	{"PUT", "/v1/acl/role/r1", `{"ID":"r2","Name":"r1"}`},
	{"POST", "/v1/acl/role/r1", `{"Name":"r1","Policies":[{"Name":"p1"}]}`},
	{"DELETE", "/v1/acl/role/r1", ""},
	{"PATCH", "/v1/acl/role/r1", ""},
	{"GET", "/v1/acl/auth-methods", ""},
	{"PUT", "/v1/acl/auth-methods", ""},
	{"PUT", "/v1/acl/auth-method", `{"Name":"m1","Type":"JWT","TokenLocality":"local","MaxTokenTTL":3600000000000,"Default":true,"Config":{"BoundAudiences":["a"]}}`},
	{"GET", "/v1/acl/auth-method", ""},
	{"GET", "/v1/acl/auth-method/m1?index=8", ""},
	{"GET", "/v1/acl/auth-method/", ""},
	{"GET", "/v1/acl/auth-method/a/b", ""},
	{"PUT", "/v1/acl/auth-method/m1", `{"Name":"m2","Type":"JWT"}`},
	{"PUT", "/v1/acl/auth-method/m1", `{"Type":"OIDC"}`},
	{"PUT", "/v1/acl/auth-method/m1", `[]`},
	{"DELETE", "/v1/acl/auth-method/m1", ""},
	{"PATCH", "/v1/acl/auth-method/m1", ""},
	{"GET", "/v1/acl/binding-rules?index=9", ""},
	{"PUT", "/v1/acl/binding-rules", ""},
	{"PUT", "/v1/acl/binding-rule", `{"Description":"d","AuthMethod":"m1","Selector":"x in list","BindType":"role","BindName":"r1"}`},
	{"GET", "/v1/acl/binding-rule", ""},
	{"GET", "/v1/acl/binding-rule/b1", ""},
	{"GET", "/v1/acl/binding-rule/", ""},
	{"GET", "/v1/acl/binding-rule/a/b", ""},
	{"PUT", "/v1/acl/binding-rule/b1", `{"ID":"b2","AuthMethod":"m1"}`},
	{"PUT", "/v1/acl/binding-rule/b1", `{"AuthMethod":"m1","BindType":"management"}`},
	{"DELETE", "/v1/acl/binding-rule/b1", ""},
	{"PATCH", "/v1/acl/binding-rule/b1", ""},
	{"PUT", "/v1/acl/login", `{"AuthMethodName":"m1","LoginToken":"x"}`},
	{"GET", "/v1/acl/login", ""},
	{"PUT", "/v1/acl/oidc/auth-url", `{"AuthMethodName":"m1","RedirectURI":"http://x","ClientNonce":"n"}`},
	{"PUT", "/v1/acl/oidc/complete-auth", `{"AuthMethodName":"m1","ClientNonce":"n","State":"s","Code":"c"}`},
	{"PUT", "/v1/acl/identity/client-introduction-token", `{"NodePool":"default","TTL":60000000000}`},
}

// aclTranscriptMethods are the ACL RPCs those requests reach.
var aclTranscriptMethods = []string{"Bootstrap", "ListPolicies", "GetPolicy", "UpsertPolicies", "DeletePolicies",
	"ListTokens", "GetToken", "UpsertTokens", "DeleteTokens", "UpsertOneTimeToken", "ExchangeOneTimeToken",
	"ListRoles", "GetRole", "GetRoleByName", "UpsertRoles", "DeleteRoles", "ListAuthMethods", "GetAuthMethod",
	"UpsertAuthMethods", "DeleteAuthMethods", "ListBindingRules", "GetBindingRule", "UpsertBindingRules",
	"DeleteBindingRules", "Login", "OIDCAuthURL", "OIDCCompleteAuth", "CreateClientIntroductionToken"}

// seedACLReplies makes every ACL RPC answer with a populated reply.
func seedACLReplies(f *fakeRPC) {
	ct := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	exp := ct.Add(time.Hour)
	qm := structs.QueryMeta{Index: 42, LastContact: 1500 * time.Millisecond, KnownLeader: true, NextToken: "next"}
	wm := structs.WriteMeta{Index: 43}
	pol := &structs.ACLPolicy{Name: "p1", Description: "d", Rules: `node { policy = "read" }`, CreateIndex: 2, ModifyIndex: 3}
	tok := &structs.ACLToken{AccessorID: "t1", SecretID: "s1", Name: "t", Type: "client", Policies: []string{"p1"},
		Roles: []*structs.ACLTokenRoleLink{{ID: "r1", Name: "role"}}, Global: true, CreateTime: ct, ExpirationTime: &exp,
		ExpirationTTL: time.Hour, CreateIndex: 4, ModifyIndex: 5}
	role := &structs.ACLRole{ID: "r1", Name: "role", Description: "d", Policies: []*structs.ACLRolePolicyLink{{Name: "p1"}}, CreateIndex: 6, ModifyIndex: 7}
	am := &structs.ACLAuthMethod{Name: "m1", Type: "JWT", TokenLocality: "local", TokenNameFormat: "x", MaxTokenTTL: time.Hour,
		Default: true, Config: &api.ACLAuthMethodConfig{BoundAudiences: []string{"a"}}, CreateTime: ct, ModifyTime: ct, CreateIndex: 8, ModifyIndex: 9}
	br := &structs.ACLBindingRule{ID: "b1", Description: "d", AuthMethod: "m1", Selector: "s", BindType: "role", BindName: "r1",
		CreateTime: ct, ModifyTime: ct, CreateIndex: 10, ModifyIndex: 11}
	f.reply("ACL.Bootstrap", structs.ACLTokenResponse{Token: tok, QueryMeta: qm})
	f.reply("ACL.ListPolicies", structs.ACLPolicyListResponse{Policies: []*structs.ACLPolicy{pol, {Name: "p2"}}, QueryMeta: qm})
	f.reply("ACL.GetPolicy", structs.ACLPolicyResponse{Policy: pol, QueryMeta: qm})
	f.reply("ACL.UpsertPolicies", wm)
	f.reply("ACL.DeletePolicies", wm)
	f.reply("ACL.ListTokens", structs.ACLTokenListResponse{Tokens: []*structs.ACLToken{tok}, QueryMeta: qm})
	f.reply("ACL.GetToken", structs.ACLTokenResponse{Token: tok, QueryMeta: qm})
	f.reply("ACL.UpsertTokens", structs.ACLTokenUpsertResponse{Tokens: []*structs.ACLToken{tok}, WriteMeta: wm})
	f.reply("ACL.DeleteTokens", wm)
	f.reply("ACL.UpsertOneTimeToken", structs.OneTimeTokenUpsertResponse{OneTimeToken: &structs.OneTimeToken{
		OneTimeSecretID: "o1", AccessorID: "t1", ExpiresAt: exp, CreateIndex: 12, ModifyIndex: 12}, WriteMeta: wm})
	f.reply("ACL.ExchangeOneTimeToken", structs.ACLTokenResponse{Token: tok, QueryMeta: qm})
	f.reply("ACL.ListRoles", structs.ACLRoleListResponse{Roles: []*structs.ACLRole{role}, QueryMeta: qm})
	f.reply("ACL.GetRole", structs.ACLRoleResponse{Role: role, QueryMeta: qm})
	f.reply("ACL.GetRoleByName", structs.ACLRoleResponse{Role: role, QueryMeta: qm})
	f.reply("ACL.UpsertRoles", structs.ACLRoleUpsertResponse{Roles: []*structs.ACLRole{role}, WriteMeta: wm})
	f.reply("ACL.DeleteRoles", wm)
	f.reply("ACL.ListAuthMethods", structs.ACLAuthMethodListResponse{AuthMethods: []*structs.ACLAuthMethod{am}, QueryMeta: qm})
	f.reply("ACL.GetAuthMethod", structs.ACLAuthMethodResponse{AuthMethod: am, QueryMeta: qm})
	f.reply("ACL.UpsertAuthMethods", structs.ACLAuthMethodUpsertResponse{AuthMethods: []*structs.ACLAuthMethod{am}, WriteMeta: wm})
	f.reply("ACL.DeleteAuthMethods", wm)
	f.reply("ACL.ListBindingRules", structs.ACLBindingRuleListResponse{Rules: []*structs.ACLBindingRule{br}, QueryMeta: qm})
	f.reply("ACL.GetBindingRule", structs.ACLBindingRuleResponse{Rule: br, QueryMeta: qm})
	f.reply("ACL.UpsertBindingRules", structs.ACLBindingRuleUpsertResponse{Rules: []*structs.ACLBindingRule{br}, WriteMeta: wm})
	f.reply("ACL.DeleteBindingRules", wm)
	f.reply("ACL.Login", structs.ACLTokenResponse{Token: tok, QueryMeta: qm})
	f.reply("ACL.OIDCAuthURL", structs.ACLOIDCAuthURLResponse{AuthURL: "http://idp/auth"})
	f.reply("ACL.OIDCCompleteAuth", structs.ACLTokenResponse{Token: tok, QueryMeta: qm})
	f.reply("ACL.CreateClientIntroductionToken", structs.ACLClientIntroductionTokenResponse{JWT: "jwt"})
}

// TestACLRoutesTranscript pins what every /v1/acl/* route answers (status,
// blocking-query headers, body) and which RPC it makes with which
// arguments, when the RPCs answer with objects, with empty replies, and
// with an error. testdata/acl_routes.txt is the transcript
// (UPDATE_GOLDEN=1 rewrites it; review the diff).
func TestACLRoutesTranscript(t *testing.T) {
	var b strings.Builder
	passes := []struct {
		name string
		seed func(*fakeRPC)
	}{
		{"populated replies", seedACLReplies},
		{"empty replies", func(*fakeRPC) {}},
		{"failing RPCs", func(f *fakeRPC) {
			for _, m := range aclTranscriptMethods {
				f.fail("ACL."+m, structs.NewErrCoded(409, "rpc %s refused", m))
			}
		}},
	}
	for _, pass := range passes {
		fmt.Fprintf(&b, "### %s\n\n", pass.name)
		env := newEnv(t, nil)
		pass.seed(env.rpc)
		for _, rq := range aclTranscriptRequests {
			var body io.Reader
			if rq.body != "" {
				body = strings.NewReader(rq.body)
			}
			req, _ := http.NewRequest(rq.method, env.srv.URL+rq.path, body)
			req.Header.Set("X-Nomad-Token", "secret")
			env.rpc.mu.Lock()
			before := len(env.rpc.calls)
			env.rpc.mu.Unlock()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fmt.Fprintf(&b, "%s %s %s\n", rq.method, rq.path, rq.body)
			fmt.Fprintf(&b, "  %d", resp.StatusCode)
			for _, h := range []string{"Content-Type", "X-Nomad-Index", "X-Nomad-LastContact", "X-Nomad-KnownLeader", "X-Nomad-NextToken"} {
				if v := resp.Header.Get(h); v != "" {
					fmt.Fprintf(&b, " %s=%s", h, v)
				}
			}
			fmt.Fprintf(&b, "\n  body: %s\n", strings.TrimSpace(string(got)))
			env.rpc.mu.Lock()
			for _, c := range env.rpc.calls[before:] {
				args, _ := json.Marshal(c.Args)
				fmt.Fprintf(&b, "  rpc %s %s\n", c.Method, args)
			}
			env.rpc.mu.Unlock()
		}
		b.WriteString("\n")
	}
	goldenFile(t, "acl_routes.txt", b.String())
}

// goldenFile compares got with testdata/name (UPDATE_GOLDEN=1 rewrites it).
func goldenFile(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s", name, i+1, g, w)
			}
		}
	}
}
