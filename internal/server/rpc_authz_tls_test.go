package server

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/structs"
	"github.com/drover-project/drover/internal/tlsutil"
)

// tlsCertFiles writes a CA and one certificate per name; it returns each
// name's tlsutil.Config (verify_server_hostname on, region global).
func tlsCertFiles(t *testing.T, names ...string) []tlsutil.Config {
	t.Helper()
	dir := t.TempDir()
	caPEM, caKey, err := tlsutil.GenerateCA(tlsutil.CAOptions{Domain: "nomad", Days: 1})
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	var out []tlsutil.Config
	for _, name := range names {
		cert, key, err := tlsutil.GenerateCert(caPEM, caKey, tlsutil.CertOptions{CommonName: name,
			DNSNames: []string{name}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, Days: 1,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
		if err != nil {
			t.Fatal(err)
		}
		cf, kf := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		if err := os.WriteFile(cf, cert, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(kf, key, 0o600); err != nil {
			t.Fatal(err)
		}
		out = append(out, tlsutil.Config{CAFile: caFile, CertFile: cf, KeyFile: kf, VerifyServerHostname: true, Region: "global"})
	}
	return out
}

// With tls.rpc a peer whose certificate names server.global.nomad may
// call the server-only RPCs without a token; a client agent's certificate
// may not, whatever token it sends.
func TestRPCAuthServerOnlyByTLSName(t *testing.T) {
	cfgs := tlsCertFiles(t, "server.global.nomad", "server.global.nomad", "client.global.nomad")
	s, root := aclServer(t)
	srvStore, err := tlsutil.New(cfgs[0])
	if err != nil {
		t.Fatal(err)
	}
	s.listener.SetTLS(&droverrpc.TLSListenerConfig{Config: srvStore.IncomingRPC(), Require: true,
		Verify: func(cs tls.ConnectionState, proto byte) error {
			return srvStore.VerifyIncoming(cs, proto == droverrpc.ProtoRaft)
		}})
	dial := func(c tlsutil.Config) *droverrpc.Pool {
		st, err := tlsutil.New(c)
		if err != nil {
			t.Fatal(err)
		}
		p := droverrpc.NewPool(5 * time.Second)
		p.SetDialer(&droverrpc.Dialer{TLS: st.OutgoingRPC})
		t.Cleanup(p.Shutdown)
		return p
	}
	peerServer, peerClient := dial(cfgs[1]), dial(cfgs[2])
	req := func(token string) *structs.EvalDequeueRequest {
		return &structs.EvalDequeueRequest{Schedulers: []string{"service"}, Timeout: 50 * time.Millisecond,
			WriteRequest: structs.WriteRequest{AuthToken: token}}
	}
	if err := peerServer.Call(s.RPCAddr(), "Eval.Dequeue", req(""), &structs.EvalDequeueResponse{}); err != nil {
		t.Errorf("Eval.Dequeue from a server certificate: %v", err)
	}
	err = peerClient.Call(s.RPCAddr(), "Eval.Dequeue", req(root), &structs.EvalDequeueResponse{})
	if err == nil || !strings.Contains(err.Error(), "only servers") {
		t.Errorf("Eval.Dequeue from a client certificate with a management token: %v, want refused", err)
	}
	// The client certificate still reaches what its token allows.
	var leader string
	if err := peerClient.Call(s.RPCAddr(), "Status.Leader", &structs.GenericRequest{}, &leader); err != nil {
		t.Errorf("Status.Leader from a client certificate: %v", err)
	}
}
