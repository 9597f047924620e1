package server

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/structs"
	"github.com/drover-project/drover/internal/tlsutil"
)

// regionCerts writes a CA and, per name, a certificate carrying that name
// (server.<region>.nomad or client.<region>.nomad); it returns the
// tlsutil store of each, for region, with verify_server_hostname.
func regionCerts(t *testing.T, names map[string]string) map[string]*tlsutil.Store {
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
	out := map[string]*tlsutil.Store{}
	for name, region := range names {
		cert, key, err := tlsutil.GenerateCert(caPEM, caKey, tlsutil.CertOptions{CommonName: name,
			DNSNames: []string{name}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, Days: 1,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
		if err != nil {
			t.Fatal(err)
		}
		cf, kf := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		os.WriteFile(cf, cert, 0o600)
		os.WriteFile(kf, key, 0o600)
		st, err := tlsutil.New(tlsutil.Config{CAFile: caFile, CertFile: cf, KeyFile: kf, VerifyServerHostname: true, Region: region})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = st
	}
	return out
}

// withRPCTLS makes a server's RPC port require TLS with st, as the agent
// sets it up with tls { rpc = true, verify_server_hostname = true }.
func withRPCTLS(st *tlsutil.Store) func(*Config) {
	return func(cfg *Config) {
		cfg.RPCTLS = &droverrpc.TLSListenerConfig{Config: st.IncomingRPC(), Require: true,
			Verify: func(cs tls.ConnectionState, proto byte) error {
				return st.VerifyIncoming(cs, proto == droverrpc.ProtoRaft)
			}}
		cfg.RPCDialer = &droverrpc.Dialer{TLS: st.OutgoingRPC, TLSRegion: st.OutgoingRPCRegion}
	}
}

// Two regions under mTLS with verify_server_hostname: east forwards a
// request for west to a west server, verifying it as server.west.nomad,
// and west serves east's server certificate (server.east.nomad), both
// signed by the same CA. A client certificate of west is still refused
// by east's servers.
func TestRegionsForwardOverMTLS(t *testing.T) {
	certs := regionCerts(t, map[string]string{
		"server.east.nomad": "east", "server.west.nomad": "west", "client.west.nomad": "west",
	})
	east := gossipServerWith(t, "e1", t.TempDir(), 1, "east", withRPCTLS(certs["server.east.nomad"]))
	west := gossipServerWith(t, "w1", t.TempDir(), 1, "west", withRPCTLS(certs["server.west.nomad"]))
	waitFor(t, 10*time.Second, "both leaders", func() bool { return east.IsLeader() && west.IsLeader() })
	if n, err := west.Join([]string{serfAddr(east)}); err != nil || n != 1 {
		t.Fatalf("join: %d, %v", n, err)
	}
	waitFor(t, 10*time.Second, "west known to east", func() bool {
		var regions []string
		return east.RPC("Region.List", &structs.GenericRequest{}, &regions) == nil && slices.Equal(regions, []string{"east", "west"})
	})

	var leader string
	if err := east.RPC("Status.Leader", &structs.GenericRequest{QueryOptions: structs.QueryOptions{Region: "west"}}, &leader); err != nil || leader != west.RPCAddr() {
		t.Fatalf("west's leader through east under mTLS: %q, %v; want %q", leader, err, west.RPCAddr())
	}
	var peers []string
	if err := west.RPC("Status.Peers", &structs.GenericRequest{QueryOptions: structs.QueryOptions{Region: "east"}}, &peers); err != nil || !slices.Equal(peers, []string{east.RPCAddr()}) {
		t.Fatalf("east's peers through west under mTLS: %v, %v", peers, err)
	}

	// A client agent of west dialling east: its certificate names no
	// server and no client of east.
	cl := droverrpc.NewPool(2 * time.Second)
	defer cl.Shutdown()
	cl.SetDialer(&droverrpc.Dialer{TLS: func() *tls.Config { return certs["client.west.nomad"].OutgoingRPCRegion("east") }})
	err := cl.Call(east.RPCAddr(), "Status.Leader", &structs.GenericRequest{}, &leader)
	if err == nil || !strings.Contains(err.Error(), "client.west.nomad") {
		t.Fatalf("a west client certificate calling east: %v, want a refusal naming it", err)
	}
}
