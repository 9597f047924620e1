package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/hashicorp/nomad/api"
)

type wiClaims struct {
	jwt.Claims
	Namespace string `json:"nomad_namespace"`
	JobID     string `json:"nomad_job_id"`
	AllocID   string `json:"nomad_allocation_id"`
	Task      string `json:"nomad_task"`
}

// verifyWithJWKS checks a JWT's signature against the agent's JWKS (as a
// third party would) and returns its claims.
func verifyWithJWKS(t *testing.T, a *agent, raw string) wiClaims {
	t.Helper()
	resp, err := http.Get(a.url("/.well-known/jwks.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.EdDSA, jose.RS256, jose.ES256})
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	keys := set.Key(tok.Headers[0].KeyID)
	if len(keys) != 1 {
		t.Fatalf("kid %q not in the JWKS", tok.Headers[0].KeyID)
	}
	var c wiClaims
	if err := tok.Claims(keys[0].Key, &c); err != nil {
		t.Fatalf("signature does not verify with the JWKS: %v", err)
	}
	return c
}

// A raw_exec task gets its workload identity in secrets/nomad_token and
// NOMAD_TOKEN, and a named identity with its audience and TTL in
// secrets/nomad_<name>.jwt; the JWTs verify with the JWKS and carry the
// task's claims; the identity reads its job's variables and no other's.
func TestWorkloadIdentity(t *testing.T) {
	a := startAgent(t, "", []string{"-dev"}, map[string]any{"acl": map[string]any{"enabled": true}})
	waitFor(t, 20*time.Second, "signing key", func() bool { return len(a.jwksKeys()) > 0 })
	root, _, err := a.client.ACLTokens().Bootstrap(nil)
	if err != nil {
		t.Fatal(err)
	}
	a.client.SetSecretID(root.SecretID)
	a.waitReady(true)

	for _, p := range []string{"nomad/jobs/wi", "nomad/jobs/other"} {
		if _, _, err := a.client.Variables().Create(&api.Variable{Path: p, Items: api.VariableItems{"who": p}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// The task also calls the Task API on secrets/api.sock with no token
	// of its own (the socket adds its identity): its job's variable is
	// readable, another job's is not.
	sock := `NOMAD_ADDR="unix://$NOMAD_SECRETS_DIR/api.sock" env -u NOMAD_TOKEN ` + droverBin
	job := rawExecJob("wi", "service", 1, `cat "$NOMAD_SECRETS_DIR/nomad_token"; echo; echo "ENV=$NOMAD_TOKEN"; cat "$NOMAD_SECRETS_DIR/nomad_vault.jwt"; echo; `+
		sock+` var get -item who nomad/jobs/wi; own=$?; echo; echo "OWN=$own"; `+sock+` var get nomad/jobs/other; echo "OTHER=$?"; sleep 300`)
	task := job.TaskGroups[0].Tasks[0]
	task.Identity = &api.WorkloadIdentity{File: true, Env: true}
	task.Identities = []*api.WorkloadIdentity{{Name: "vault", Audience: []string{"vault.io"}, File: true, TTL: time.Hour}}
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var lines []string
	var allocID string
	waitFor(t, 30*time.Second, "the task to print its identities", func() bool {
		stubs := a.allocsOf("wi")
		if len(stubs) == 0 {
			return false
		}
		allocID = stubs[0].ID
		alloc, _, err := a.client.Allocations().Info(allocID, nil)
		if err != nil {
			return false
		}
		r, err := a.client.AllocFS().Cat(alloc, "alloc/logs/t.stdout.0", nil)
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(r)
		r.Close()
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		return strings.Contains(string(b), "OTHER=")
	})
	out := strings.Join(lines[3:], "\n")
	if !strings.Contains(out, "nomad/jobs/wi\nOWN=0") || !strings.Contains(out, "OTHER=1") {
		t.Fatalf("task API socket: the task's own job's variable must read, another's must not:\n%s", out)
	}
	fileTok, envTok, vaultTok := lines[0], strings.TrimPrefix(lines[1], "ENV="), lines[2]
	if fileTok == "" || fileTok != envTok {
		t.Fatalf("secrets/nomad_token %q and NOMAD_TOKEN %q differ", fileTok, envTok)
	}
	c := verifyWithJWKS(t, a, fileTok)
	if c.Namespace != "default" || c.JobID != "wi" || c.AllocID != allocID || c.Task != "t" {
		t.Fatalf("claims: %+v", c)
	}
	if !c.Audience.Contains("nomadproject.io") || c.IssuedAt == nil || c.Expiry != nil {
		t.Fatalf("default identity audience/times: %+v", c.Claims)
	}
	v := verifyWithJWKS(t, a, vaultTok)
	if !v.Audience.Contains("vault.io") || v.Expiry == nil || v.Expiry.Time().Sub(v.IssuedAt.Time()) != time.Hour {
		t.Fatalf("named identity: %+v", v.Claims)
	}

	// The identity is a token for its own job's variables only.
	cfg := api.DefaultConfig()
	cfg.Address, cfg.SecretID = a.url(""), fileTok
	wc, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := wc.Variables().Read("nomad/jobs/wi", nil); err != nil || got.Items["who"] != "nomad/jobs/wi" {
		t.Fatalf("own job's variable: %v %+v", err, got)
	}
	if _, _, err := wc.Variables().Read("nomad/jobs/other", nil); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("another job's variable: want 403, got %v", err)
	}
	if _, _, err := wc.Variables().Create(&api.Variable{Path: "nomad/jobs/wi", Items: api.VariableItems{"x": "y"}}, nil); err == nil {
		t.Fatal("a workload identity wrote a variable")
	}
	// After a rotation the old key still verifies the running task's
	// identity, and it cannot be removed while that task runs.
	if _, _, err := a.client.Keyring().Rotate(&api.KeyringRotateOptions{Full: true}, nil); err != nil {
		t.Fatal(err)
	}
	var keys []*api.RootKeyMeta
	waitFor(t, 20*time.Second, "the variables to move to the new key", func() bool {
		keys, _, err = a.client.Keyring().List(nil)
		for _, k := range keys {
			if k.State == api.RootKeyStateDeprecated {
				return false
			}
		}
		return err == nil && len(keys) == 2
	})
	verifyWithJWKS(t, a, fileTok)
	for _, k := range keys {
		if k.State != api.RootKeyStateActive {
			if _, err := a.client.Keyring().Delete(&api.KeyringDeleteOptions{KeyID: k.KeyID}, nil); err == nil || !strings.Contains(err.Error(), "running allocation") {
				t.Fatalf("removing the key of a running task's identity: %v", err)
			}
		}
	}

	// Once the allocation stops, the identity no longer resolves.
	if _, _, err := a.client.Jobs().Deregister("wi", false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the stopped allocation's identity to be refused", func() bool {
		_, _, err := wc.Variables().Read("nomad/jobs/wi", nil)
		return err != nil && strings.Contains(err.Error(), "403")
	})
}
