package cli

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"slices"
	"strings"
	"testing"

	mcli "github.com/hashicorp/cli"
)

func runTLSCmd(t *testing.T, cmd interface{ Run([]string) int }, ui *mcli.BasicUi, args ...string) (int, string) {
	t.Helper()
	code := cmd.Run(args)
	return code, ui.Writer.(*bytes.Buffer).String() + ui.ErrorWriter.(*bytes.Buffer).String()
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Nomad's file names, names and key type; a second run refuses to
// overwrite; the certificates verify against the CA.
func TestTLSCreateMakesNomadsFiles(t *testing.T) {
	t.Chdir(t.TempDir())
	newUI := func() *mcli.BasicUi { return &mcli.BasicUi{Writer: &bytes.Buffer{}, ErrorWriter: &bytes.Buffer{}} }
	ui := newUI()
	if code, out := runTLSCmd(t, &TLSCACreateCommand{Meta: Meta{Ui: ui}}, ui); code != 0 {
		t.Fatalf("tls ca create: %d %s", code, out)
	}
	for _, args := range [][]string{{"-server"}, {"-client"}, {"-cli"}, {"-server", "-region", "other", "-additional-dnsname", "srv.example.com", "-additional-ipaddress", "10.0.0.7"}} {
		ui := newUI()
		if code, out := runTLSCmd(t, &TLSCertCreateCommand{Meta: Meta{Ui: ui}}, ui, args...); code != 0 {
			t.Fatalf("tls cert create %v: %d %s", args, code, out)
		}
	}
	ca := readCert(t, "nomad-agent-ca.pem")
	if !ca.IsCA {
		t.Fatal("nomad-agent-ca.pem is not a CA")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for file, want := range map[string][]string{
		"global-server-nomad.pem": {"server.global.nomad", "localhost", "127.0.0.1"},
		"global-client-nomad.pem": {"client.global.nomad", "localhost", "127.0.0.1"},
		"global-cli-nomad.pem":    {"cli.global.nomad", "localhost"},
		"other-server-nomad.pem":  {"server.other.nomad", "localhost", "srv.example.com", "127.0.0.1", "10.0.0.7"},
	} {
		c := readCert(t, file)
		var got []string
		got = append(got, c.DNSNames...)
		for _, ip := range c.IPAddresses {
			got = append(got, ip.String())
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s names %v, want %v", file, got, want)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s does not verify against the CA: %v", file, err)
		}
		key := strings.TrimSuffix(file, ".pem") + "-key.pem"
		pair, err := tls.LoadX509KeyPair(file, key)
		if err != nil {
			t.Fatalf("%s with %s: %v", file, key, err)
		}
		if k, ok := pair.PrivateKey.(*ecdsa.PrivateKey); !ok || k.Curve != elliptic.P256() {
			t.Errorf("%s: key %T, want ECDSA P-256", key, pair.PrivateKey)
		}
		if st, _ := os.Stat(key); st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", key, st.Mode().Perm())
		}
		if c.PublicKeyAlgorithm != x509.ECDSA {
			t.Errorf("%s key algorithm %v, want ECDSA", file, c.PublicKeyAlgorithm)
		}
	}
	ui = newUI()
	code, out := runTLSCmd(t, &TLSCertCreateCommand{Meta: Meta{Ui: ui}}, ui, "-server")
	if code == 0 || !strings.Contains(out, `"global-server-nomad.pem" already exists`) {
		t.Errorf("second tls cert create -server: %d %q, want a refusal naming the file", code, out)
	}
	ui = newUI()
	code, out = runTLSCmd(t, &TLSCertCreateCommand{Meta: Meta{Ui: ui}}, ui, "-server", "-client")
	if code == 0 || !strings.Contains(out, "Exactly one of -server, -client or -cli") {
		t.Errorf("tls cert create -server -client: %d %q", code, out)
	}
}
