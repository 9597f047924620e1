package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// With ACLs on, variables obey the token's `variables` path rules: reads
// and writes per path glob, lists filtered to the paths the token may list.
// The OIDC discovery document points at the JWKS.
func TestVariablesACL(t *testing.T) {
	a := startAgent(t, "", []string{"-dev"}, map[string]any{"acl": map[string]any{"enabled": true}})
	waitFor(t, 20*time.Second, "signing key", func() bool { return len(a.jwksKeys()) > 0 })
	root, _, err := a.client.ACLTokens().Bootstrap(nil)
	if err != nil {
		t.Fatal(err)
	}
	a.client.SetSecretID(root.SecretID)
	for _, p := range []string{"app/web", "app/secret/key", "other/x"} {
		if _, _, err := a.client.Variables().Create(&api.Variable{Path: p, Items: api.VariableItems{"k": p}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.client.ACLPolicies().Upsert(&api.ACLPolicy{Name: "app-vars", Rules: `
namespace "default" {
  variables {
    path "app/*"        { capabilities = ["read", "list", "write"] }
    path "app/secret/*" { capabilities = ["deny"] }
  }
}`}, nil); err != nil {
		t.Fatal(err)
	}
	tok, _, err := a.client.ACLTokens().Create(&api.ACLToken{Type: "client", Policies: []string{"app-vars"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.DefaultConfig()
	cfg.Address, cfg.SecretID = a.url(""), tok.SecretID
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := c.Variables().Read("app/web", nil); err != nil || v.Items["k"] != "app/web" {
		t.Fatalf("read app/web: %v %+v", err, v)
	}
	for _, p := range []string{"app/secret/key", "other/x"} {
		if _, _, err := c.Variables().Read(p, nil); err == nil || !strings.Contains(err.Error(), "403") {
			t.Fatalf("read %s: want 403, got %v", p, err)
		}
	}
	if _, _, err := c.Variables().Create(&api.Variable{Path: "other/y", Items: api.VariableItems{"k": "v"}}, nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("write other/y: want 403, got %v", err)
	}
	if _, _, err := c.Variables().Create(&api.Variable{Path: "app/new", Items: api.VariableItems{"k": "v"}}, nil); err != nil {
		t.Fatalf("write app/new: %v", err)
	}
	if _, err := c.Variables().Delete("app/new", nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("delete without destroy: want 403, got %v", err)
	}
	list, _, err := c.Variables().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, m := range list {
		paths = append(paths, m.Path)
	}
	if strings.Join(paths, ",") != "app/new,app/web" {
		t.Fatalf("list shows %v, want only the paths the token may list", paths)
	}
	anon, _ := api.NewClient(&api.Config{Address: a.url("")})
	if _, _, err := anon.Variables().Read("app/web", nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("anonymous read: want 403, got %v", err)
	}

	resp, err := http.Get(a.url("/.well-known/openid-configuration"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Issuer  string   `json:"issuer"`
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != 200 {
		t.Fatalf("openid-configuration: %d %v", resp.StatusCode, err)
	}
	if doc.JWKSURI != a.url("/.well-known/jwks.json") || len(doc.Algs) == 0 {
		t.Fatalf("openid-configuration: %+v", doc)
	}
}
