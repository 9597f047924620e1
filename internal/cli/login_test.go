package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// login settles the method and its type as Nomad's: -method may be left
// out when one default method (of -type, if given) exists.
func TestResolveLoginMethod(t *testing.T) {
	methods := []*api.ACLAuthMethodListStub{{Name: "okta", Type: "OIDC", Default: true}, {Name: "ci", Type: "JWT"}, {Name: "azure", Type: "OIDC"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/acl/auth-methods" {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(methods)
	}))
	defer srv.Close()
	cfg := api.DefaultConfig()
	cfg.Address = srv.URL
	client, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, typ, wantName, wantType, err string }{
		{"", "", "okta", "OIDC", ""},
		{"", "oidc", "okta", "OIDC", ""},
		{"", "JWT", "", "", "No default JWT auth method is configured: pass -method (auth methods: azure (OIDC), ci (JWT), okta (OIDC))"},
		{"ci", "", "ci", "JWT", ""},
		{"azure", "OIDC", "azure", "OIDC", ""},
		{"azure", "JWT", "", "", "Auth method azure is of type OIDC, not JWT"},
		{"nope", "", "", "", `Auth method "nope" not found`},
		{"", "ldap", "", "", `-type must be OIDC or JWT, not "LDAP"`},
	} {
		n, ty, err := resolveLoginMethod(client, c.name, c.typ)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q/%q: %v, want error %q", c.name, c.typ, err, c.err)
			}
			continue
		}
		if err != nil || n != c.wantName || ty != c.wantType {
			t.Errorf("%q/%q: %q %q %v, want %q %q", c.name, c.typ, n, ty, err, c.wantName, c.wantType)
		}
	}
	// A default of each type: the type must be said.
	methods[1].Default = true
	if _, _, err := resolveLoginMethod(client, "", ""); err == nil || !strings.Contains(err.Error(), "pass -type or -method") {
		t.Errorf("two defaults: %v", err)
	}
	if n, _, err := resolveLoginMethod(client, "", "JWT"); err != nil || n != "ci" {
		t.Errorf("two defaults, -type JWT: %q %v", n, err)
	}
}

// -config takes Nomad's keys inline, from @file or stdin, and refuses a key
// it does not know by name.
func TestReadAuthMethodConfig(t *testing.T) {
	const js = `{"OIDCDiscoveryURL": "https://idp", "OIDCClientID": "id", "OIDCClientSecret": "s", "BoundAudiences": ["id"],
		"AllowedRedirectURIs": ["http://localhost:4649/oidc/callback"], "OIDCScopes": ["groups"], "ClaimMappings": {"email": "email"},
		"ListClaimMappings": {"groups": "groups"}, "DiscoveryCaPem": [], "SigningAlgs": ["RS256"], "ExpirationLeeway": "30s"}`
	path := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(path, []byte(js), 0o600)
	for _, arg := range []string{js, "@" + path} {
		c, err := readAuthMethodConfig(arg)
		if err != nil || c.OIDCDiscoveryURL != "https://idp" || c.OIDCClientSecret != "s" || c.AllowedRedirectURIs[0] != "http://localhost:4649/oidc/callback" ||
			c.ListClaimMappings["groups"] != "groups" || c.SigningAlgs[0] != "RS256" || c.ExpirationLeeway != 30*time.Second {
			t.Fatalf("%.10s: %+v %v", arg, c, err)
		}
	}
	if _, err := readAuthMethodConfig(`{"OIDCDiscoveryURL": "x", "ClientSecret": "s"}`); err == nil || !strings.Contains(err.Error(), "unknown key(s) ClientSecret") {
		t.Errorf("unknown key: %v", err)
	}
	if _, err := readAuthMethodConfig("@/nonexistent/c.json"); err == nil || !strings.Contains(err.Error(), "Error reading -config") {
		t.Errorf("missing file: %v", err)
	}
}

// $BROWSER is a list of commands; "%s" stands for the URL, else it is the
// last argument; the first that starts is used.
func TestOpenBrowserFromEnv(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "url")
	script := filepath.Join(dir, "b")
	os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s %s' \"$1\" \"$2\" > '"+out+"'\n"), 0o755)
	t.Setenv("BROWSER", "/nonexistent/browser:"+script+" --new %s")
	if err := openBrowser("http://idp/authorize?x=1"); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, _ = os.ReadFile(out); len(got) > 0 {
			break
		}
	}
	if string(got) != "--new http://idp/authorize?x=1" {
		t.Fatalf("browser ran with %q", got)
	}
	t.Setenv("BROWSER", "/nonexistent/browser")
	if err := openBrowser("http://idp/"); err == nil {
		t.Fatal("no error when no browser starts")
	}
}
