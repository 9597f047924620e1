package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcli "github.com/hashicorp/cli"
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

// lockedBuffer is a bytes.Buffer safe for the callback server's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// The OIDC flow in process, against a fake cluster: the redirect URI names
// the callback server's port, the client nonce and the callback's state
// and code reach complete-auth, a callback of another state is refused
// without ending the login.
func TestOIDCLoginFlow(t *testing.T) {
	var mu sync.Mutex
	var authReq api.ACLOIDCAuthURLRequest
	cluster := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/acl/auth-methods":
			json.NewEncoder(w).Encode([]*api.ACLAuthMethodListStub{{Name: "sso", Type: "OIDC", Default: true}})
		case "/v1/acl/oidc/auth-url":
			json.NewDecoder(r.Body).Decode(&authReq)
			json.NewEncoder(w).Encode(api.ACLOIDCAuthURLResponse{AuthURL: "https://idp.invalid/authorize?state=st-1&redirect_uri=" + url.QueryEscape(authReq.RedirectURI)})
		case "/v1/acl/oidc/complete-auth":
			var in api.ACLOIDCCompleteAuthRequest
			json.NewDecoder(r.Body).Decode(&in)
			if in.AuthMethodName != "sso" || in.State != "st-1" || in.Code != "c-1" || in.ClientNonce == "" || in.ClientNonce != authReq.ClientNonce ||
				in.RedirectURI != authReq.RedirectURI {
				http.Error(w, fmt.Sprintf("bad complete-auth %+v (auth-url %+v)", in, authReq), 400)
				return
			}
			json.NewEncoder(w).Encode(api.ACLToken{AccessorID: "acc", SecretID: "sec", Name: "OIDC-sso", Type: "client", Policies: []string{"ops"}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer cluster.Close()
	t.Setenv("BROWSER", "/nonexistent/browser")
	var out, errb lockedBuffer
	c := loginCommand()
	c.Meta = Meta{Ui: &mcli.BasicUi{Writer: &out, ErrorWriter: &errb}, out: &out}
	done := make(chan int, 1)
	go func() { done <- c.Run([]string{"-address=" + cluster.URL, "-oidc-callback-addr=127.0.0.1:0", "-json"}) }()

	var redirect string
	for deadline := time.Now().Add(10 * time.Second); redirect == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		redirect = authReq.RedirectURI
		mu.Unlock()
	}
	if !strings.HasPrefix(redirect, "http://127.0.0.1:") || strings.HasSuffix(redirect, ":0/oidc/callback") || !strings.HasSuffix(redirect, "/oidc/callback") {
		t.Fatalf("redirect URI %q", redirect)
	}
	get := func(u string) (int, string) {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, page := get(redirect + "?state=st-0&code=c-0"); code != 400 || !strings.Contains(page, "does not belong") {
		t.Fatalf("other state: %d %s", code, page)
	}
	if code, page := get(redirect + "?state=st-1&code=c-1"); code != 200 || !strings.Contains(page, "Signed in via sso") {
		t.Fatalf("callback: %d %s", code, page)
	}
	select {
	case code := <-done:
		var tok api.ACLToken
		if err := json.Unmarshal([]byte(out.String()), &tok); code != 0 || err != nil || tok.SecretID != "sec" {
			t.Fatalf("exit %d, stdout %q (%v), stderr:\n%s", code, out.String(), err, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("login did not finish; stderr:\n%s", errb.String())
	}
	if !strings.Contains(errb.String(), "https://idp.invalid/authorize?state=st-1") || !strings.Contains(errb.String(), "Could not open a browser") {
		t.Fatalf("stderr:\n%s", errb.String())
	}
}
