package integration

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// pkiDir runs `drover tls` in a fresh directory: a CA, a server, a client
// and a CLI certificate of region global, and a client certificate of
// region other.
func pkiDir(t *testing.T) string {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"tls", "ca", "create"},
		{"tls", "cert", "create", "-server"},
		{"tls", "cert", "create", "-client"},
		{"tls", "cert", "create", "-cli"},
		{"tls", "cert", "create", "-client", "-region", "other"},
	} {
		droverIn(t, dir, nil, args...)
	}
	return dir
}

// droverIn runs the drover binary in dir with env added, failing the test
// when it fails.
func droverIn(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	out, err := droverCmd(dir, env, args...)
	if err != nil {
		t.Fatalf("drover %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func droverCmd(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command(droverBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func tlsBlock(dir, base string) map[string]any {
	return map[string]any{
		"http": true, "rpc": true,
		"ca_file":                filepath.Join(dir, "nomad-agent-ca.pem"),
		"cert_file":              filepath.Join(dir, base+".pem"),
		"key_file":               filepath.Join(dir, base+"-key.pem"),
		"verify_server_hostname": true,
		"verify_https_client":    true,
	}
}

// useTLS points the agent's api client at its HTTPS API with the CLI
// certificate.
func (a *agent) useTLS(dir string) {
	conf := api.DefaultConfig()
	conf.Address = fmt.Sprintf("https://127.0.0.1:%d", a.http)
	conf.TLSConfig = &api.TLSConfig{CACert: filepath.Join(dir, "nomad-agent-ca.pem"),
		ClientCert: filepath.Join(dir, "global-cli-nomad.pem"), ClientKey: filepath.Join(dir, "global-cli-nomad-key.pem")}
	c, err := api.NewClient(conf)
	if err != nil {
		a.t.Fatal(err)
	}
	a.client = c
}

// A server and two client agents with certificates made by `drover tls`,
// RPC and HTTP TLS, verify_server_hostname and verify_https_client: the
// client with a certificate of the region registers and runs a job; the one
// whose certificate is for region "other" never registers and its log says
// why; the CLI works with NOMAD_CACERT and the client certificate and fails
// clearly without the CA; SIGHUP makes the server present a renewed
// certificate.
func TestMTLSServerClientAndCLI(t *testing.T) {
	dir := pkiDir(t)
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1},
		"tls":    tlsBlock(dir, "global-server-nomad"),
	})
	srv.useTLS(dir)
	waitFor(t, 20*time.Second, "a leader over HTTPS", func() bool {
		select {
		case <-srv.exited:
			t.Fatalf("server exited:\n%s", tail(srv.out.String(), 40))
		default:
		}
		l, err := srv.client.Status().Leader()
		return err == nil && l != ""
	})
	servers := []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}
	raw := map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}}
	good := startAgent(t, t.TempDir(), servers, map[string]any{"plugin": raw, "tls": tlsBlock(dir, "global-client-nomad")})
	bad := startAgent(t, t.TempDir(), servers, map[string]any{"plugin": raw, "tls": tlsBlock(dir, "other-client-nomad")})

	waitFor(t, 20*time.Second, "the client of region global ready", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		return err == nil && len(nodes) >= 1 && nodes[0].Status == "ready"
	})
	if _, _, err := srv.client.Jobs().Register(rawExecJob("secure", "batch", 1, "echo secure"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the job complete on the TLS client", func() bool {
		s, _, err := srv.client.Jobs().Summary("secure", nil)
		return err == nil && s.Summary["g"].Complete == 1
	})
	waitFor(t, 20*time.Second, "the other-region client's log to say why it is refused", func() bool {
		return strings.Contains(bad.out.String(), `not valid for region \"global\"`) ||
			strings.Contains(bad.out.String(), `not valid for region "global"`)
	})
	// The server reaches the client's file system over the client's node
	// session, inside TLS.
	allocs := srv.allocsOf("secure")
	if len(allocs) != 1 {
		t.Fatalf("allocs of secure: %d", len(allocs))
	}
	rc, err := srv.client.AllocFS().Cat(&api.Allocation{ID: allocs[0].ID, NodeID: allocs[0].NodeID}, "alloc/logs/t.stdout.0", nil)
	if err != nil {
		t.Fatalf("alloc fs cat through the server: %v", err)
	}
	logb, _ := io.ReadAll(rc)
	rc.Close()
	if string(logb) != "secure\n" {
		t.Errorf("task log through the server = %q, want \"secure\\n\"", logb)
	}
	for _, l := range strings.Split(bad.out.String(), "\n") {
		if strings.Contains(l, "not valid for region") {
			t.Logf("other-region client: %s", l)
			break
		}
	}
	nodes, _, err := srv.client.Nodes().List(nil)
	if err != nil || len(nodes) != 1 || nodes[0].Name != fmt.Sprintf("it-%d", good.http) {
		t.Fatalf("nodes = %+v (%v), want only the client of region global", nodes, err)
	}
	if n, _, err := srv.client.Nodes().Info(nodes[0].ID, nil); err != nil || !n.TLSEnabled {
		t.Error("the node of a client serving HTTPS says TLSEnabled = false")
	}

	// The CLI.
	addr := fmt.Sprintf("NOMAD_ADDR=https://127.0.0.1:%d", srv.http)
	certs := []string{addr, "NOMAD_CLIENT_CERT=" + filepath.Join(dir, "global-cli-nomad.pem"),
		"NOMAD_CLIENT_KEY=" + filepath.Join(dir, "global-cli-nomad-key.pem")}
	out := droverIn(t, dir, append(certs, "NOMAD_CACERT="+filepath.Join(dir, "nomad-agent-ca.pem")), "node", "status")
	if !strings.Contains(out, "ready") {
		t.Errorf("node status over HTTPS:\n%s", out)
	}
	out, err = droverCmd(dir, append(certs, "NOMAD_CACERT="), "node", "status")
	if err == nil || !strings.Contains(out, "x509: certificate signed by unknown authority") {
		t.Errorf("node status without NOMAD_CACERT: err %v, output:\n%s", err, out)
	}
	t.Logf("CLI without NOMAD_CACERT: %s", strings.TrimSpace(out))
	out, err = droverCmd(dir, []string{addr, "NOMAD_CACERT=" + filepath.Join(dir, "nomad-agent-ca.pem")}, "node", "status")
	if err == nil {
		t.Errorf("node status without a client certificate succeeded under verify_https_client:\n%s", out)
	}
	waitFor(t, 20*time.Second, "the server's log to name the refused HTTPS client", func() bool {
		for _, l := range strings.Split(srv.out.String(), "\n") {
			if strings.Contains(l, "agent.http") && strings.Contains(l, "TLS handshake error") {
				return true
			}
		}
		return false
	})

	// SIGHUP reloads a renewed server certificate.
	before := httpsSerial(t, dir, srv.http)
	renew := t.TempDir()
	droverIn(t, renew, nil, "tls", "cert", "create", "-server", "-ca", filepath.Join(dir, "nomad-agent-ca.pem"),
		"-key", filepath.Join(dir, "nomad-agent-ca-key.pem"))
	for _, f := range []string{"global-server-nomad.pem", "global-server-nomad-key.pem"} {
		b, err := os.ReadFile(filepath.Join(renew, f))
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, f+".new")
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	want := pemSerial(t, filepath.Join(dir, "global-server-nomad.pem"))
	if want == before {
		t.Fatal("the renewed certificate has the old serial")
	}
	srv.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, 30*time.Second, "the server to present the renewed certificate", func() bool {
		return httpsSerial(t, dir, srv.http) == want
	})
	// The cluster keeps working on new connections: a second job runs.
	if _, _, err := srv.client.Jobs().Register(rawExecJob("after-reload", "batch", 1, "echo again"), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "a job after the reload", func() bool {
		s, _, err := srv.client.Jobs().Summary("after-reload", nil)
		return err == nil && s.Summary["g"].Complete == 1
	})
}

// httpsSerial is the serial of the certificate the HTTPS API presents now.
func httpsSerial(t *testing.T, dir string, port int) string {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(dir, "nomad-agent-ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "global-cli-nomad.pem"), filepath.Join(dir, "global-cli-nomad-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatalf("HTTPS handshake: %v", err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func pemSerial(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(bytes.TrimSpace(b))
	if blk == nil {
		t.Fatalf("%s holds no PEM", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.String()
}
