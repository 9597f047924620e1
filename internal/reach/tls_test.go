package reach

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	netrpc "net/rpc"
	"os"
	"path/filepath"
	"testing"
	"time"

	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/tlsutil"
)

// tlsStores makes a CA and one store per name (server.global.nomad,
// client.global.nomad, ...).
func tlsStores(t *testing.T, names ...string) []*tlsutil.Store {
	t.Helper()
	dir := t.TempDir()
	caPEM, caKey, err := tlsutil.GenerateCA(tlsutil.CAOptions{Domain: "nomad", Days: 1})
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, caPEM, 0o600)
	var out []*tlsutil.Store
	for i, name := range names {
		cert, key, err := tlsutil.GenerateCert(caPEM, caKey, tlsutil.CertOptions{CommonName: name, DNSNames: []string{name},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, Days: 1,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
		if err != nil {
			t.Fatal(err)
		}
		cf, kf := filepath.Join(dir, fmt.Sprintf("%d.pem", i)), filepath.Join(dir, fmt.Sprintf("%d-key.pem", i))
		os.WriteFile(cf, cert, 0o600)
		os.WriteFile(kf, key, 0o600)
		st, err := tlsutil.New(tlsutil.Config{CAFile: caFile, CertFile: cf, KeyFile: kf, VerifyServerHostname: true, Region: "global"})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, st)
	}
	return out
}

func tlsDial(st *tlsutil.Store) DialFunc {
	return (&droverrpc.Dialer{TLS: st.OutgoingRPC}).DialContext
}

func startTLSHubServer(t *testing.T, st *tlsutil.Store, peers func() []string) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := droverrpc.NewListener(ln, netrpc.NewServer(), nil, nil)
	l.SetTLS(&droverrpc.TLSListenerConfig{Config: st.IncomingRPC(), Require: true,
		Verify: func(cs tls.ConnectionState, proto byte) error {
			return st.VerifyIncoming(cs, proto == droverrpc.ProtoRaft)
		}})
	hub := NewHub(HubConfig{
		Verify: func(id, secret string) error {
			if id != "n1" || secret != "s1" {
				return errors.New("wrong secret")
			}
			return nil
		},
		Peers: peers, Proto: droverrpc.ProtoNodeTunnel, Dial: tlsDial(st),
	})
	l.Handle(droverrpc.ProtoNodeSession, hub.HandleSession)
	l.Handle(droverrpc.ProtoNodeTunnel, hub.HandleTunnel)
	go l.Serve()
	t.Cleanup(func() { l.Close(); hub.Close() })
	return &testServer{hub: hub, addr: ln.Addr().String()}
}

// With tls.rpc the node's session, the search among peers and a client
// agent's tunnel all ride TLS; a plaintext tunnel is refused.
func TestSessionsAndTunnelsOverTLS(t *testing.T) {
	st := tlsStores(t, "server.global.nomad", "server.global.nomad", "client.global.nomad")
	var peersOfA, peersOfB []string
	a := startTLSHubServer(t, st[0], func() []string { return peersOfA })
	b := startTLSHubServer(t, st[1], func() []string { return peersOfB })
	peersOfA, peersOfB = []string{b.addr}, []string{a.addr}
	n := StartNode(NodeConfig{
		Servers:  func() []string { return []string{b.addr} },
		Identity: func() (string, string) { return "n1", "s1" },
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "node n1 answers %s", r.URL.Path)
		}),
		Proto: droverrpc.ProtoNodeSession, Dial: tlsDial(st[2]),
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
	})
	t.Cleanup(n.Close)
	waitFor(t, 10*time.Second, "n1's TLS session on b", func() bool { return b.hub.Has("n1") })

	conn, err := a.hub.DialNode(context.Background(), "n1")
	if err != nil {
		t.Fatalf("a searching its peer over TLS: %v", err)
	}
	if got := get(t, conn, "/via-a"); got != "node n1 answers /via-a" {
		t.Fatalf("got %q", got)
	}
	conn, err = DialTunnelVia(context.Background(), tlsDial(st[2]), a.addr, droverrpc.ProtoNodeTunnel, "n1", true)
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, conn, "/from-client"); got != "node n1 answers /from-client" {
		t.Fatalf("got %q", got)
	}
	if c, err := DialTunnel(context.Background(), b.addr, droverrpc.ProtoNodeTunnel, "n1", false); err == nil {
		c.Close()
		t.Fatal("a plaintext tunnel was served with tls.rpc on")
	}
}
