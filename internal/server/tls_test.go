package server

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/structs"
	"github.com/drover-project/drover/internal/tlsutil"
)

// tlsServerFiles writes a CA and one server.global.nomad certificate per
// server; it returns each server's tlsutil.Config.
func tlsServerFiles(t *testing.T, n int) []tlsutil.Config {
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
	for i := 0; i < n; i++ {
		cert, key, err := tlsutil.GenerateCert(caPEM, caKey, tlsutil.CertOptions{CommonName: "server.global.nomad",
			DNSNames: []string{"server.global.nomad"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, Days: 1,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
		if err != nil {
			t.Fatal(err)
		}
		cf, kf := filepath.Join(dir, "s"+string(rune('0'+i))+".pem"), filepath.Join(dir, "s"+string(rune('0'+i))+"-key.pem")
		os.WriteFile(cf, cert, 0o600)
		os.WriteFile(kf, key, 0o600)
		out = append(out, tlsutil.Config{CAFile: caFile, CertFile: cf, KeyFile: kf, VerifyServerHostname: true, Region: "global"})
	}
	return out
}

// Three servers whose RPC port requires TLS elect a leader, replicate
// through Raft and forward a follower's write to the leader, all inside
// TLS; a plaintext caller is refused.
func TestServersOverTLS(t *testing.T) {
	cfgs := tlsServerFiles(t, 3)
	servers := testClusterWith(t, 3, func(i int, cfg *Config) {
		st, err := tlsutil.New(cfgs[i])
		if err != nil {
			t.Fatal(err)
		}
		cfg.RPCTLS = &droverrpc.TLSListenerConfig{Config: st.IncomingRPC(), Require: true,
			Verify: func(cs tls.ConnectionState, proto byte) error {
				return st.VerifyIncoming(cs, proto == droverrpc.ProtoRaft)
			}}
		cfg.RPCDialer = &droverrpc.Dialer{TLS: st.OutgoingRPC}
	})
	waitFor(t, 10*time.Second, "a leader elected over TLS", func() bool { return currentLeader(servers) != nil })
	var follower *Server
	for _, s := range servers {
		if !s.IsLeader() {
			follower = s
			break
		}
	}
	var rr structs.JobRegisterResponse
	if err := follower.RPC("Job.Register", &structs.JobRegisterRequest{Job: testJob("over-tls", 0)}, &rr); err != nil {
		t.Fatalf("write through a follower (forwarded over TLS): %v", err)
	}
	waitFor(t, 10*time.Second, "the job on every server", func() bool {
		for _, s := range servers {
			if j, _ := s.State().JobByID(nil, structs.DefaultNamespace, "over-tls"); j == nil {
				return false
			}
		}
		return true
	})
	plain := droverrpc.NewPool(2 * time.Second)
	defer plain.Shutdown()
	var leader string
	if err := plain.Call(follower.RPCAddr(), "Status.Leader", &structs.GenericRequest{}, &leader); err == nil {
		t.Fatal("a plaintext RPC was served by a server with tls.rpc on")
	}
}
