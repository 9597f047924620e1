package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writePair(t *testing.T, dir, base string, caPEM, caKey []byte, name string) (string, string) {
	t.Helper()
	cert, key, err := GenerateCert(caPEM, caKey, CertOptions{CommonName: name, DNSNames: []string{name},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, Days: 1,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Fatal(err)
	}
	cf, kf := filepath.Join(dir, base+".pem"), filepath.Join(dir, base+"-key.pem")
	os.WriteFile(cf, cert, 0o600)
	os.WriteFile(kf, key, 0o600)
	return cf, kf
}

// A reload that fails (a key that does not match) leaves the running
// certificate in use and says why; one that works switches.
func TestReloadKeepsOldMaterialOnError(t *testing.T) {
	dir := t.TempDir()
	caPEM, caKey, err := GenerateCA(CAOptions{Domain: "nomad", Days: 1})
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, caPEM, 0o600)
	cf, kf := writePair(t, dir, "a", caPEM, caKey, ServerName("global"))
	cfg := Config{CAFile: caFile, CertFile: cf, KeyFile: kf, Region: "global"}
	st, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	old := st.Leaf().SerialNumber.String()
	cf2, kf2 := writePair(t, dir, "b", caPEM, caKey, ServerName("global"))
	bad := cfg
	bad.CertFile, bad.KeyFile = cf2, kf // mismatched pair
	if err := st.Reload(bad); err == nil || !strings.Contains(err.Error(), "tls.cert_file/tls.key_file") {
		t.Fatalf("reload with a mismatched key: %v", err)
	}
	if st.Leaf().SerialNumber.String() != old {
		t.Fatal("a failed reload replaced the certificate")
	}
	good := cfg
	good.CertFile, good.KeyFile = cf2, kf2
	if err := st.Reload(good); err != nil {
		t.Fatal(err)
	}
	if st.Leaf().SerialNumber.String() == old {
		t.Fatal("a reload kept the old certificate")
	}
}

// Without verify_server_hostname any certificate signed by the CA is
// served; with it, only this region's client names and any region's
// server names (Raft: only this region's servers).
func TestVerifyIncomingNames(t *testing.T) {
	dir := t.TempDir()
	caPEM, caKey, _ := GenerateCA(CAOptions{Domain: "nomad", Days: 1})
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, caPEM, 0o600)
	cf, kf := writePair(t, dir, "s", caPEM, caKey, ServerName("global"))
	peer := func(name string) tls.ConnectionState {
		c, _ := writePair(t, dir, name, caPEM, caKey, name)
		b, _ := os.ReadFile(c)
		pair, err := tls.X509KeyPair(b, mustRead(t, filepath.Join(dir, name+"-key.pem")))
		if err != nil {
			t.Fatal(err)
		}
		leaf, _ := x509.ParseCertificate(pair.Certificate[0])
		return tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
	}
	lax, _ := New(Config{CAFile: caFile, CertFile: cf, KeyFile: kf, Region: "global"})
	strict, _ := New(Config{CAFile: caFile, CertFile: cf, KeyFile: kf, Region: "global", VerifyServerHostname: true})
	for _, tc := range []struct {
		name       string
		serverOnly bool
		strictOK   bool
	}{
		{"server.global.nomad", true, true},
		{"client.global.nomad", false, true},
		{"client.global.nomad", true, false},
		{"client.other.nomad", false, false},
		{"client.other.nomad", true, false},
		{"server.other.nomad", false, true}, // forwarded from another region
		{"server.other.nomad", true, false}, // but never a Raft peer
	} {
		cs := peer(tc.name)
		if err := lax.VerifyIncoming(cs, tc.serverOnly); err != nil {
			t.Errorf("%s without verify_server_hostname: %v", tc.name, err)
		}
		if err := strict.VerifyIncoming(cs, tc.serverOnly); (err == nil) != tc.strictOK {
			t.Errorf("%s (server only %v) with verify_server_hostname: err = %v, want ok %v", tc.name, tc.serverOnly, err, tc.strictOK)
		}
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A server dialling a server of another region with verify_server_hostname
// checks the name of the region it dials (server.west.nomad), not its own;
// the server it reaches accepts it, a server of another region.
func TestOutgoingRPCRegionName(t *testing.T) {
	dir := t.TempDir()
	caPEM, caKey, _ := GenerateCA(CAOptions{Domain: "nomad", Days: 1})
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, caPEM, 0o600)
	store := func(region string) *Store {
		cf, kf := writePair(t, dir, region, caPEM, caKey, ServerName(region))
		st, err := New(Config{CAFile: caFile, CertFile: cf, KeyFile: kf, Region: region, VerifyServerHostname: true})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	east, west := store("east"), store("west")
	handshake := func(client *tls.Config) error {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		srvErr := make(chan error, 1)
		go func() {
			srv := tls.Server(b, west.IncomingRPC())
			err := srv.Handshake()
			if err == nil {
				err = west.VerifyIncoming(srv.ConnectionState(), false)
			}
			b.Close()
			srvErr <- err
		}()
		err := tls.Client(a, client).Handshake()
		a.Close()
		if serr := <-srvErr; err == nil && serr != nil {
			return fmt.Errorf("server side: %w", serr)
		}
		return err
	}
	if err := handshake(east.OutgoingRPCRegion("west")); err != nil {
		t.Fatalf("east dialling west as server.west.nomad: %v", err)
	}
	err := handshake(east.OutgoingRPC())
	if err == nil || !strings.Contains(err.Error(), "server.east.nomad") {
		t.Fatalf("east dialling west expecting its own region's name: %v, want a refusal naming server.east.nomad", err)
	}
	if err := handshake(east.OutgoingRPCRegion("north")); err == nil {
		t.Fatal("a dial for region north accepted west's certificate")
	}
}
