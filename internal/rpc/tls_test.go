package rpc

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/tlsutil"
)

// testPKI is a CA and certificates made as `drover tls` makes them.
type testPKI struct {
	dir          string
	caPEM, caKey []byte
	caFile       string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	cert, key, err := tlsutil.GenerateCA(tlsutil.CAOptions{Domain: "nomad", Days: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{dir: t.TempDir(), caPEM: cert, caKey: key}
	p.caFile = filepath.Join(p.dir, "ca.pem")
	if err := os.WriteFile(p.caFile, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// cert writes a certificate naming name (and 127.0.0.1) and returns
// its files.
func (p *testPKI) cert(t *testing.T, file, name string) (string, string) {
	t.Helper()
	cert, key, err := tlsutil.GenerateCert(p.caPEM, p.caKey, tlsutil.CertOptions{CommonName: name,
		DNSNames: []string{name, "localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, Days: 1,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Fatal(err)
	}
	cf, kf := filepath.Join(p.dir, file+".pem"), filepath.Join(p.dir, file+"-key.pem")
	if err := os.WriteFile(cf, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kf, key, 0o600); err != nil {
		t.Fatal(err)
	}
	return cf, kf
}

func (p *testPKI) store(t *testing.T, file, name, region string) (*tlsutil.Store, tlsutil.Config) {
	t.Helper()
	cf, kf := p.cert(t, file, name)
	cfg := tlsutil.Config{CAFile: p.caFile, CertFile: cf, KeyFile: kf, VerifyServerHostname: true, Region: region}
	st, err := tlsutil.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st, cfg
}

func tlsPool(st *tlsutil.Store) *Pool {
	p := NewPool(10 * time.Second)
	p.SetDialer(&Dialer{TLS: st.OutgoingRPC})
	return p
}

func startTLSServer(t *testing.T, pki *testPKI) (*Listener, *RaftLayer, *tlsutil.Store, tlsutil.Config) {
	l, rl := startServer(t)
	srv, cfg := pki.store(t, "server", "server.global.nomad", "global")
	l.SetTLS(&TLSListenerConfig{Config: srv.IncomingRPC(), Require: true, Verify: func(cs tls.ConnectionState, proto byte) error {
		return srv.VerifyIncoming(cs, proto == ProtoRaft)
	}})
	return l, rl, srv, cfg
}

func TestTLSRequiredRefusesPlaintextAndServesCertifiedPeers(t *testing.T) {
	pki := newTestPKI(t)
	l, _, _, _ := startTLSServer(t, pki)
	addr := l.Addr().String()
	args := &EchoArgs{Msg: "hi"}

	plain := NewPool(10 * time.Second)
	defer plain.Shutdown()
	var r EchoReply
	if err := plain.Call(addr, "Echo.Say", args, &r); err == nil || IsServerError(err) {
		t.Fatalf("plaintext call with tls.rpc on: err = %v, want a transport error", err)
	}

	cl, _ := pki.store(t, "client", "client.global.nomad", "global")
	p := tlsPool(cl)
	defer p.Shutdown()
	if err := p.Call(addr, "Echo.Say", args, &r); err != nil || r.Msg != "echo hi" {
		t.Fatalf("TLS call from a client of the region: %q, %v", r.Msg, err)
	}

	other, _ := pki.store(t, "other", "client.other.nomad", "global")
	po := tlsPool(other)
	defer po.Shutdown()
	err := po.Call(addr, "Echo.Say", args, &r)
	if err == nil || !IsServerError(err) || !strings.Contains(err.Error(), `not valid for region "global"`) ||
		!strings.Contains(err.Error(), "client.other.nomad") {
		t.Fatalf("call with another region's certificate: err = %v, want a refusal naming the certificate and the region", err)
	}
}

func TestTLSDialerChecksServerName(t *testing.T) {
	pki := newTestPKI(t)
	l, _, _, _ := startTLSServer(t, pki)
	// A client of region "other" expects server.other.nomad.
	cl, _ := pki.store(t, "client", "client.other.nomad", "other")
	_, err := (&Dialer{TLS: cl.OutgoingRPC}).Dial(l.Addr().String(), 10*time.Second)
	if err == nil || !IsTLSError(err) || !strings.Contains(err.Error(), "server.other.nomad") {
		t.Fatalf("dial of another region's server: err = %v, want a TLS error naming server.other.nomad", err)
	}
	// A CA that did not sign the server's certificate.
	pki2 := newTestPKI(t)
	stranger, _ := pki2.store(t, "client", "client.global.nomad", "global")
	_, err = (&Dialer{TLS: stranger.OutgoingRPC}).Dial(l.Addr().String(), 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("dial with another CA: err = %v, want unknown authority", err)
	}
}

func TestTLSRaftOnlyFromServersAndReloadedCertificate(t *testing.T) {
	pki := newTestPKI(t)
	l, rl, srv, srvCfg := startTLSServer(t, pki)
	addr := l.Addr().String()

	peer, _ := pki.store(t, "peer", "server.global.nomad", "global")
	out := NewRaftLayer(l.Addr())
	out.SetDialer(&Dialer{TLS: peer.OutgoingRPC})
	c, err := out.Dial(raft.ServerAddress(addr), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		if in, err := rl.Accept(); err == nil {
			acc <- in
		}
	}()
	select {
	case in := <-acc:
		in.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the server's Raft layer never accepted a server peer's TLS connection")
	}

	// A client certificate may not speak Raft: the connection is closed.
	cl, _ := pki.store(t, "client", "client.global.nomad", "global")
	cc, err := (&Dialer{TLS: cl.OutgoingRPC}).Dial(addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cc.Write([]byte{ProtoRaft})
	cc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := cc.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("Raft from a client certificate: read err = %v, want the connection closed", err)
	}
	cc.Close()

	// Reload: new connections see the new certificate.
	before := serverSerial(t, cl, addr)
	cf, kf := pki.cert(t, "server2", "server.global.nomad")
	srvCfg.CertFile, srvCfg.KeyFile = cf, kf
	if err := srv.Reload(srvCfg); err != nil {
		t.Fatal(err)
	}
	after := serverSerial(t, cl, addr)
	if before == after || after != srv.Leaf().SerialNumber.String() {
		t.Fatalf("after reload the server presents serial %s (before %s), want the new certificate's %s", after, before, srv.Leaf().SerialNumber)
	}
}

func serverSerial(t *testing.T, st *tlsutil.Store, addr string) string {
	t.Helper()
	c, err := (&Dialer{TLS: st.OutgoingRPC}).Dial(addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
