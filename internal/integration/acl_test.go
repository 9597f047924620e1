package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/hashicorp/nomad/api"
)

// cliEnv runs the binary against a with extra environment variables.
func (a *agent) cliEnv(env []string, args ...string) (string, int) {
	a.t.Helper()
	cmd := exec.Command(droverBin, args...)
	cmd.Env = append(append(cmd.Environ(), "NOMAD_ADDR="+a.url(""), "NOMAD_TOKEN="), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		a.t.Fatalf("%v: %v", args, err)
	}
	return string(out), code
}

// ACLs end to end on a dev agent: bootstrap, a policy that grants
// submit-job in team-a only, a token with it runs a job there and is
// refused in default; the CLI with NOMAD_TOKEN; a JWT login.
func TestACLEndToEnd(t *testing.T) {
	a := startAgent(t, "", []string{"-dev"}, map[string]any{"acl": map[string]any{"enabled": true}})
	waitFor(t, 20*time.Second, "signing key", func() bool { return len(a.jwksKeys()) > 0 })

	// Without a token nothing but the public routes answers.
	if _, _, err := a.client.Jobs().List(nil); err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("anonymous job list: %v", err)
	}
	out, code := a.cliEnv(nil, "acl", "bootstrap")
	m := regexp.MustCompile(`Secret ID\s+= (\S+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("acl bootstrap (%d):\n%s", code, out)
	}
	root := m[1]
	if out, code := a.cliEnv(nil, "acl", "bootstrap"); code == 0 || !strings.Contains(out, "ACL bootstrap already done") {
		t.Fatalf("second bootstrap (%d):\n%s", code, out)
	}
	a.client.SetSecretID(root)
	a.waitReady(true)

	if _, err := a.client.Namespaces().Register(&api.Namespace{Name: "team-a"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.client.ACLPolicies().Upsert(&api.ACLPolicy{Name: "team-a-submit",
		Rules: `namespace "team-a" { capabilities = ["submit-job", "read-job", "list-jobs"] }`}, nil); err != nil {
		t.Fatal(err)
	}
	tok, _, err := a.client.ACLTokens().Create(&api.ACLToken{Name: "team-a", Type: "client", Policies: []string{"team-a-submit"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := api.DefaultConfig()
	cfg.Address, cfg.SecretID = a.url(""), tok.SecretID
	teamA, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}

	job := rawExecJob("web", "service", 1, "sleep 300")
	job.Namespace = ptr("team-a")
	if _, _, err := teamA.Jobs().Register(job, nil); err != nil {
		t.Fatalf("register in team-a: %v", err)
	}
	waitFor(t, 30*time.Second, "web running in team-a", func() bool {
		allocs, _, err := a.client.Jobs().Allocations("web", false, &api.QueryOptions{Namespace: "team-a"})
		return err == nil && len(allocs) == 1 && allocs[0].ClientStatus == "running"
	})
	other := rawExecJob("web", "service", 1, "sleep 300")
	_, _, err = teamA.Jobs().Register(other, nil)
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("register in default with the team-a token: %v, want 403 Permission denied", err)
	}
	// A list across namespaces shows the team-a token only team-a's job.
	stubs, _, err := teamA.Jobs().List(&api.QueryOptions{Namespace: "*"})
	if err != nil || len(stubs) != 1 || stubs[0].Namespace != "team-a" {
		t.Fatalf("jobs across namespaces with the team-a token: %v %+v", err, stubs)
	}

	// The CLI takes the token from NOMAD_TOKEN.
	if out, code := a.cliEnv([]string{"NOMAD_TOKEN=" + tok.SecretID}, "job", "status", "-namespace", "team-a", "web"); code != 0 || !strings.Contains(out, "web") {
		t.Fatalf("job status with NOMAD_TOKEN (%d):\n%s", code, out)
	}
	if out, code := a.cliEnv(nil, "job", "status", "-namespace", "team-a", "web"); code == 0 || !strings.Contains(out, "Permission denied") {
		t.Fatalf("job status without a token (%d):\n%s", code, out)
	}
	if out, code := a.cliEnv([]string{"NOMAD_TOKEN=" + tok.SecretID}, "acl", "token", "self"); code != 0 || !strings.Contains(out, tok.AccessorID) {
		t.Fatalf("acl token self (%d):\n%s", code, out)
	}

	// A JWT auth method: a login token signed here becomes an ACL token
	// with the bound policy.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if _, _, err := a.client.ACLAuthMethods().Create(&api.ACLAuthMethod{Name: "ci", Type: "JWT", TokenLocality: "local",
		MaxTokenTTL: time.Hour, Config: &api.ACLAuthMethodConfig{
			JWTValidationPubKeys: []string{string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))},
			BoundAudiences:       []string{"drover"}, ClaimMappings: map[string]string{"team": "team"},
		}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.client.ACLBindingRules().Create(&api.ACLBindingRule{AuthMethod: "ci", Selector: `value.team == "a"`,
		BindType: "policy", BindName: "team-a-submit"}, nil); err != nil {
		t.Fatal(err)
	}
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, nil)
	login, err := jwt.Signed(signer).Claims(jwt.Claims{Audience: jwt.Audience{"drover"}, Expiry: jwt.NewNumericDate(time.Now().Add(time.Minute))}).
		Claims(map[string]any{"team": "a"}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	out, code = a.cliEnv(nil, "login", "-method", "ci", "-login-token", login)
	m = regexp.MustCompile(`Secret ID\s+= (\S+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("login (%d):\n%s", code, out)
	}
	if out, code := a.cliEnv([]string{"NOMAD_TOKEN=" + m[1]}, "job", "status", "-namespace", "team-a", "web"); code != 0 {
		t.Fatalf("job status with the login token (%d):\n%s", code, out)
	}
}

// With ACLs on a separate server and client: the client agent registers
// and reports allocations with its node secret, and its own HTTP API
// resolves tokens through the server.
func TestACLSeparateServerAndClient(t *testing.T) {
	aclOn := map[string]any{"enabled": true}
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1}, "acl": aclOn,
	})
	waitFor(t, 20*time.Second, "signing key", func() bool { return len(srv.jwksKeys()) > 0 })
	root, _, err := srv.client.ACLTokens().Bootstrap(nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.client.SetSecretID(root.SecretID)
	cli := startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}}, "acl": aclOn,
	})
	waitFor(t, 20*time.Second, "client node ready on the server", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	if _, _, err := srv.client.Jobs().Register(rawExecJob("remote", "batch", 2, "echo remote"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "both allocs complete (status pushed with the node secret)", func() bool {
		s, _, err := srv.client.Jobs().Summary("remote", nil)
		return err == nil && s.Summary["g"].Complete == 2
	})
	// The client agent's API: anonymous refused, the root token resolved
	// through the server.
	if _, _, err := cli.client.Nodes().List(nil); err == nil || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("anonymous node list on the client agent: %v", err)
	}
	cli.client.SetSecretID(root.SecretID)
	if nodes, _, err := cli.client.Nodes().List(nil); err != nil || len(nodes) != 1 {
		t.Fatalf("node list with the root token on the client agent: %v %v", nodes, err)
	}
	// The event stream the client agent forwards carries the token.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	evCh, err := cli.client.EventStream().Stream(ctx, map[api.Topic][]string{api.TopicJob: {"remote"}}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for got := false; !got; {
		select {
		case f := <-evCh:
			if f == nil || f.Err != nil {
				t.Fatalf("forwarded stream with the root token: %+v", f)
			}
			got = len(f.Events) > 0
		case <-ctx.Done():
			t.Fatal("no job event through the client agent")
		}
	}
	cli.client.SetSecretID("00000000-0000-4000-8000-000000000000")
	if _, _, err := cli.client.Nodes().List(nil); err == nil || !strings.Contains(err.Error(), "ACL token not found") {
		t.Fatalf("unknown token on the client agent: %v", err)
	}
}
