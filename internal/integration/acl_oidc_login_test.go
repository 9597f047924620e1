package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/oidctest"
)

// loginRun is a `drover login` running as a subprocess.
type loginRun struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	exited         chan struct{}
	code           int
}

func (a *agent) startLogin(env []string, args ...string) *loginRun {
	a.t.Helper()
	l := &loginRun{stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	l.cmd = exec.Command(droverBin, append([]string{"login"}, args...)...)
	l.cmd.Env = append(append(l.cmd.Environ(), "NOMAD_ADDR="+a.url(""), "NOMAD_TOKEN="), env...)
	l.cmd.Stdout, l.cmd.Stderr = l.stdout, l.stderr
	if err := l.cmd.Start(); err != nil {
		a.t.Fatal(err)
	}
	go func() {
		err := l.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			l.code = ee.ExitCode()
		} else if err != nil {
			l.code = -1
		}
		close(l.exited)
	}()
	a.t.Cleanup(func() {
		select {
		case <-l.exited:
		default:
			l.cmd.Process.Kill()
			<-l.exited
		}
	})
	return l
}

// wait is the login's exit code once it has exited.
func (l *loginRun) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-l.exited:
		return l.code
	case <-time.After(d):
		t.Fatalf("login still running after %s\nstdout:\n%s\nstderr:\n%s", d, l.stdout, l.stderr)
	}
	return 0
}

// authURLIn polls s for the provider URL the CLI prints (or hands to the
// browser).
func authURLIn(t *testing.T, what string, s func() string, issuer string) string {
	t.Helper()
	re := regexp.MustCompile(regexp.QuoteMeta(issuer+"/authorize?") + `\S+`)
	var u string
	waitFor(t, 20*time.Second, "the auth URL in "+what, func() bool {
		u = re.FindString(s())
		return u != ""
	})
	return u
}

// visit is the browser: it follows the auth URL through the provider to
// the CLI's callback and returns the page it lands on.
func visit(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("browsing %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Nomad's OIDC login from the terminal, end to end: an OIDC auth method made
// with `acl auth-method create -config @file` (Nomad's config keys, the
// secret never shown again), binding rules on mapped claims, and `drover
// login` run as a user would, with the test as the browser. The provider
// is served over HTTPS and trusted through DiscoveryCaPem.
func TestACLOIDCLoginCLI(t *testing.T) {
	a := startAgent(t, "", []string{"-dev"}, map[string]any{"acl": map[string]any{"enabled": true}})
	waitFor(t, 20*time.Second, "signing key", func() bool { return len(a.jwksKeys()) > 0 })
	root, _, err := a.client.ACLTokens().Bootstrap(nil)
	if err != nil {
		t.Fatal(err)
	}
	a.client.SetSecretID(root.SecretID)
	a.waitReady(true)
	rootEnv := []string{"NOMAD_TOKEN=" + root.SecretID}

	is := oidctest.NewTLS(t, "drover-cli", "cli-s3cret")
	is.SetClaims("alice", map[string]any{"groups": []string{"ops", "eng"}, "email": "alice@example.com"})
	browser := is.HTTPClient()
	cbAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	redirect := "http://" + cbAddr + "/oidc/callback"

	for name, rules := range map[string]string{"ops": `node { policy = "read" }`, "self": `namespace "default" { policy = "read" }`} {
		if _, err := a.client.ACLPolicies().Upsert(&api.ACLPolicy{Name: name, Rules: rules}, nil); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{
		"OIDCDiscoveryURL": is.URL, "OIDCClientID": "drover-cli", "OIDCClientSecret": "cli-s3cret",
		"BoundAudiences": []string{"drover-cli"}, "AllowedRedirectURIs": []string{redirect},
		"OIDCScopes": []string{"profile", "email"}, "ClaimMappings": map[string]string{"email": "email"},
		"ListClaimMappings": map[string]string{"groups": "groups"}, "DiscoveryCaPem": []string{is.CertPEM()},
		"SigningAlgs": []string{"ES256"}, "OIDCEnablePKCE": true,
	})
	cfgPath := filepath.Join(dir, "sso.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}

	// A misspelt key is refused by name, not dropped.
	if out, code := a.cliEnv(rootEnv, "acl", "auth-method", "create", "-name", "bad", "-type", "OIDC", "-token-locality", "global",
		"-max-token-ttl", "1h", "-config", `{"OIDCDiscoveryURL": "https://x", "OIDCClientID": "c", "DiscoveryURL": "https://x"}`); code == 0 ||
		!strings.Contains(out, "unknown key(s) DiscoveryURL") {
		t.Fatalf("create with an unknown config key (%d):\n%s", code, out)
	}
	out, code := a.cliEnv(rootEnv, "acl", "auth-method", "create", "-name", "sso", "-type", "oidc", "-token-locality", "global",
		"-max-token-ttl", "1h", "-default", "-config", "@"+cfgPath)
	if code != 0 || !regexp.MustCompile(`OIDC Client Secret\s+= redacted`).MatchString(out) || strings.Contains(out, "cli-s3cret") {
		t.Fatalf("auth-method create (%d):\n%s", code, out)
	}
	out, code = a.cliEnv(rootEnv, "acl", "auth-method", "info", "sso")
	for _, want := range []string{`Type\s+= OIDC`, `Default\s+= true`, `OIDC Discovery URL\s+= ` + regexp.QuoteMeta(is.URL),
		`OIDC Client ID\s+= drover-cli`, `OIDC Client Secret\s+= redacted`, `OIDC Scopes\s+= profile, email`,
		`Bound audiences\s+= drover-cli`, `Allowed redirects URIs\s+= ` + regexp.QuoteMeta(redirect),
		`Discovery CA pem\s+= certificate O=Acme Co`, `Signing algorithms\s+= ES256`, `Claim mappings\s+= \{email: email\}`,
		`List claim mappings\s+= \{groups: groups\}`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("auth-method info lacks %q", want)
		}
	}
	if code != 0 || strings.Contains(out, "cli-s3cret") || t.Failed() {
		t.Fatalf("auth-method info (%d):\n%s", code, out)
	}
	if out, code := a.cliEnv(rootEnv, "acl", "auth-method", "info", "-json", "sso"); code != 0 || !strings.Contains(out, `"OIDCClientSecret": "redacted"`) ||
		strings.Contains(out, "cli-s3cret") {
		t.Fatalf("auth-method info -json (%d):\n%s", code, out)
	}
	for _, r := range [][2]string{{`"ops" in list.groups`, "ops"}, {`value.email == "alice@example.com"`, "self"}} {
		if out, code := a.cliEnv(rootEnv, "acl", "binding-rule", "create", "-auth-method", "sso", "-selector", r[0],
			"-bind-type", "policy", "-bind-name", r[1]); code != 0 {
			t.Fatalf("binding-rule create (%d):\n%s", code, out)
		}
	}
	wantPolicies := func(got []string) bool {
		slices.Sort(got)
		return slices.Equal(got, []string{"ops", "self"})
	}

	// The default method, a $BROWSER that records the URL it is given.
	urlFile := filepath.Join(dir, "opened")
	script := filepath.Join(dir, "browser")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s\\n' \"$1\" >> '"+urlFile+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var secret string
	t.Run("browser", func(t *testing.T) {
		l := a.startLogin([]string{"BROWSER=" + script}, "-oidc-callback-addr", cbAddr)
		u := authURLIn(t, "the browser's file", func() string { b, _ := os.ReadFile(urlFile); return string(b) }, is.URL)
		if code, page := visit(t, browser, u); code != 200 || !strings.Contains(page, "Signed in via sso") {
			t.Fatalf("callback page %d:\n%s", code, page)
		}
		if code := l.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("login exited %d\nstdout:\n%s\nstderr:\n%s", code, l.stdout, l.stderr)
		}
		// Read once the login has exited: its stderr reaches the buffer
		// through a pipe, after the browser script may already have run.
		if !strings.Contains(l.stderr.String(), u) {
			t.Errorf("the URL is not printed:\n%s", l.stderr)
		}
		out := l.stdout.String()
		m := regexp.MustCompile(`Secret ID\s+= (\S+)`).FindStringSubmatch(out)
		p := regexp.MustCompile(`Policies\s+= \[(.*)\]`).FindStringSubmatch(out)
		if !strings.HasPrefix(out, "Successfully logged in via OIDC and sso") || m == nil || p == nil || !wantPolicies(strings.Fields(p[1])) ||
			!regexp.MustCompile(`Name\s+= OIDC-sso`).MatchString(out) {
			t.Fatalf("login output:\n%s", out)
		}
		secret = m[1]
	})
	if secret == "" {
		t.FailNow()
	}
	// The token works for what its policies grant, and only that.
	env := []string{"NOMAD_TOKEN=" + secret}
	if out, code := a.cliEnv(env, "node", "status"); code != 0 || !strings.Contains(out, "ready") {
		t.Fatalf("node status with the OIDC token (%d):\n%s", code, out)
	}
	if out, code := a.cliEnv(env, "job", "status"); code != 0 {
		t.Fatalf("job status with the OIDC token (%d):\n%s", code, out)
	}
	if out, code := a.cliEnv(env, "namespace", "apply", "-description", "x", "team-b"); code == 0 || !strings.Contains(out, "Permission denied") {
		t.Fatalf("namespace apply with the OIDC token (%d):\n%s", code, out)
	}

	// `acl auth-method update` reads the method back (secret redacted) and
	// writes it again: the secret must survive, or the next login's code
	// exchange fails.
	if out, code := a.cliEnv(rootEnv, "acl", "auth-method", "update", "-max-token-ttl", "2h", "sso"); code != 0 ||
		!regexp.MustCompile(`Max Token TTL\s+= 2h0m0s`).MatchString(out) {
		t.Fatalf("auth-method update (%d):\n%s", code, out)
	}

	// Explicit method and type, -json, no browser that starts: the URL is
	// read from the output. A callback with another state is refused and
	// the login goes on.
	t.Run("json-no-browser-wrong-state", func(t *testing.T) {
		l := a.startLogin([]string{"BROWSER=/nonexistent/browser"}, "-method", "sso", "-type", "oidc", "-json", "-oidc-callback-addr", cbAddr)
		u := authURLIn(t, "stderr", l.stderr.String, is.URL)
		code, page := visit(t, http.DefaultClient, redirect+"?code=forged&state=not-this-login")
		if code != 400 || !strings.Contains(page, "does not belong to the login in progress") {
			t.Fatalf("forged callback: %d\n%s", code, page)
		}
		if code, page := visit(t, browser, u); code != 200 || !strings.Contains(page, "Signed in") {
			t.Fatalf("callback page %d:\n%s", code, page)
		}
		if code := l.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("login exited %d\nstdout:\n%s\nstderr:\n%s", code, l.stdout, l.stderr)
		}
		var tok api.ACLToken
		if err := json.Unmarshal([]byte(l.stdout.String()), &tok); err != nil || tok.SecretID == "" || !wantPolicies(tok.Policies) {
			t.Fatalf("-json output (%v):\n%s", err, l.stdout)
		}
		// The note is printed after the URL (once the browser failed to
		// start): read once the login has exited.
		if !strings.Contains(l.stderr.String(), "Could not open a browser") {
			t.Errorf("no note that the browser did not open:\n%s", l.stderr)
		}
		if !strings.Contains(l.stderr.String(), "Ignored a callback whose state is not this login's") {
			t.Errorf("the forged callback is not reported:\n%s", l.stderr)
		}
	})

	// The provider refuses: the browser and the terminal say why.
	t.Run("error-callback", func(t *testing.T) {
		is.Refuse("access_denied", "alice declined")
		defer is.Refuse("", "")
		l := a.startLogin([]string{"BROWSER=/nonexistent/browser"}, "-oidc-callback-addr", cbAddr)
		u := authURLIn(t, "stderr", l.stderr.String, is.URL)
		if code, page := visit(t, browser, u); code != 403 || !strings.Contains(page, "access_denied: alice declined") {
			t.Fatalf("callback page %d:\n%s", code, page)
		}
		if code := l.wait(t, 30*time.Second); code != 1 ||
			!strings.Contains(l.stderr.String(), "the OIDC provider refused the login (access_denied: alice declined)") {
			t.Fatalf("login exited %d\nstderr:\n%s", code, l.stderr)
		}
	})

	// Nobody completes the login: it gives up with a clear message.
	t.Run("timeout", func(t *testing.T) {
		l := a.startLogin([]string{"BROWSER=/nonexistent/browser"}, "-oidc-callback-addr", cbAddr, "-oidc-timeout", "1s")
		if code := l.wait(t, 30*time.Second); code != 1 || !strings.Contains(l.stderr.String(), "no callback from the OIDC provider within 1s") {
			t.Fatalf("login exited %d\nstderr:\n%s", code, l.stderr)
		}
	})

	// A JWT method's flag with an OIDC method, a type that is not the
	// method's, an unknown method: refused before any browser.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-login-token", "x.y.z"}, "-login-token is for JWT auth methods; sso is of type OIDC"},
		{[]string{"-method", "sso", "-type", "JWT"}, "Auth method sso is of type OIDC, not JWT"},
		{[]string{"-type", "JWT"}, "No default JWT auth method is configured"},
		{[]string{"-method", "nope"}, `Auth method "nope" not found (auth methods: sso (OIDC))`},
	} {
		if out, code := a.cliEnv(nil, append([]string{"login"}, c.args...)...); code != 1 || !strings.Contains(out, c.want) {
			t.Errorf("login %v (%d):\n%s", c.args, code, out)
		}
	}
}
