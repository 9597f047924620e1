package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cliStdin runs the binary against a with stdin.
func (a *agent) cliStdin(stdin string, args ...string) (string, int) {
	a.t.Helper()
	cmd := exec.Command(droverBin, args...)
	cmd.Env = append(cmd.Environ(), "NOMAD_ADDR="+a.url(""), "NOMAD_TOKEN=")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		a.t.Fatalf("%v: %v", args, err)
	}
	return string(out), code
}

// `var put|get|list|purge|init|lock` and `operator root keyring
// list|rotate|remove` against a dev agent.
func TestVariablesCLI(t *testing.T) {
	a := startAgent(t, "", []string{"-dev"}, nil)
	a.waitReady(false)
	dir := t.TempDir()
	certFile := filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(certFile, []byte("-----BEGIN CERT-----\nabc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(stdin string, want int, args ...string) string {
		t.Helper()
		out, code := a.cliStdin(stdin, args...)
		if code != want {
			t.Fatalf("%v exited %d, want %d:\n%s", args, code, want, out)
		}
		return out
	}

	run("", 0, "var", "put", "app/web", "user=admin", "cert=@"+certFile)
	run("s3cret\n", 0, "var", "put", "app/db", "password=-")
	if out := run("", 0, "var", "get", "-item", "cert", "app/web"); !strings.Contains(out, "BEGIN CERT") {
		t.Fatalf("item from @file: %q", out)
	}
	if out := run("", 0, "var", "get", "-item", "password", "app/db"); strings.TrimSpace(out) != "s3cret" {
		t.Fatalf("item from stdin: %q", out)
	}
	// A specification from stdin, in HCL.
	run("path = \"app/spec\"\nitems {\n  a = \"1\"\n}\n", 0, "var", "put", "-in", "hcl", "-")
	if out := run("", 0, "var", "get", "-out", "json", "app/spec"); !strings.Contains(out, `"a": "1"`) {
		t.Fatalf("spec from stdin: %s", out)
	}
	// var init writes a spec that var put accepts.
	spec := filepath.Join(dir, "spec.nv.hcl")
	run("", 0, "var", "init", spec)
	run("", 0, "var", "put", "-in", "hcl", "@"+spec)
	if out := run("", 0, "var", "list", "app/"); !strings.Contains(out, "app/db") || !strings.Contains(out, "app/web") || strings.Contains(out, "nomad/jobs/example") {
		t.Fatalf("list app/:\n%s", out)
	}
	// A stale -check-index is refused and shows the current index.
	if out := run("", 1, "var", "put", "-check-index", "1", "app/web", "user=other"); !strings.Contains(out, "does not match") {
		t.Fatalf("stale check-index:\n%s", out)
	}
	run("", 0, "var", "purge", "app/web")
	if out := run("", 1, "var", "get", "app/web"); !strings.Contains(out, "variable not found") {
		t.Fatalf("get after purge:\n%s", out)
	}
	// var lock runs the command while holding the lock; its exit code is
	// the command's. The TTL (60 s) is far from the bound (20 s): a lock
	// command that waited for its lock to expire would take a minute.
	start := time.Now()
	if out := run("", 3, "var", "lock", "-ttl", "60s", "-delay", "1s", "app/lock", "sh", "-c", "exit 3"); strings.Contains(out, "Error") {
		t.Fatalf("var lock:\n%s", out)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Fatalf("var lock took %v: it did not return when its command exited", took)
	}
	if v, _, err := a.client.Variables().Read("app/lock", nil); err != nil || v.Lock != nil {
		t.Fatalf("lock not released after the command: %v %+v", err, v)
	}

	// The keyring.
	out := run("", 0, "operator", "root", "keyring", "list")
	if !strings.Contains(out, "active") {
		t.Fatalf("keyring list:\n%s", out)
	}
	keys, _, _ := a.client.Keyring().List(nil)
	old := keys[0].KeyID
	run("", 1, "operator", "root", "keyring", "remove", old) // the active key
	run("", 0, "operator", "root", "keyring", "rotate", "-full")
	waitFor(t, 20*time.Second, "the rekey to finish", func() bool {
		out, _ := a.cliStdin("", "operator", "root", "keyring", "list")
		return strings.Contains(out, old) && strings.Contains(out, "inactive")
	})
	run("", 0, "operator", "root", "keyring", "remove", old)
	if out := run("", 0, "var", "get", "-item", "password", "app/db"); strings.TrimSpace(out) != "s3cret" {
		t.Fatalf("read after rotate: %q", out)
	}
}
