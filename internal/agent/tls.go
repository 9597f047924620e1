package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/drover-project/drover/internal/agent/config"
	"github.com/drover-project/drover/internal/reach"
	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/server"
	"github.com/drover-project/drover/internal/tlsutil"
)

// setupTLS loads the tls block's material when tls.http or tls.rpc is on:
// the HTTP listener is wrapped, and RPC dialing goes through TLS.
func (a *Agent) setupTLS() error {
	c := a.config
	if !c.TLSOn() {
		return nil
	}
	st, err := tlsutil.New(c.TLSMaterial())
	if err != nil {
		return fmt.Errorf("agent: tls: %w", err)
	}
	a.tls = st
	if c.TLS.EnableRPC {
		a.rpcDialer = &droverrpc.Dialer{TLS: st.OutgoingRPC, TLSRegion: st.OutgoingRPCRegion}
		a.pool.SetDialer(a.rpcDialer)
	}
	if c.TLS.EnableHTTP {
		a.httpLn = tls.NewListener(a.httpLn, st.HTTPS())
	}
	a.logger.Info("TLS enabled", "http", c.TLS.EnableHTTP, "rpc", c.TLS.EnableRPC,
		"verify_server_hostname", c.TLS.VerifyServerHostname, "verify_https_client", c.TLS.VerifyHTTPSClient)
	return nil
}

// serverTLS sets the server's RPC port TLS: with tls.rpc every connection
// must be TLS (unless rpc_upgrade_mode), peers present certificates signed
// by the CA, and with verify_server_hostname only this region's servers
// (Raft), and this region's clients or any region's servers (everything
// else: other regions forward requests here) are served.
func (a *Agent) serverTLS(sc *server.Config) {
	if a.tls == nil || !a.config.TLS.EnableRPC {
		return
	}
	st := a.tls
	sc.RPCTLS = &droverrpc.TLSListenerConfig{
		Config:  st.IncomingRPC(),
		Require: !a.config.TLS.RPCUpgradeMode,
		Verify: func(cs tls.ConnectionState, proto byte) error {
			return st.VerifyIncoming(cs, proto == droverrpc.ProtoRaft)
		},
	}
	sc.RPCDialer = a.rpcDialer
}

// dialRPC connects to a server's RPC port the way this agent's RPC does
// (TLS with tls.rpc).
func (a *Agent) dialRPC() reach.DialFunc {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		return a.rpcDialer.DialContext(ctx, addr)
	}
}

// reloadTLS loads the tls block of a re-read configuration: new connections
// (HTTPS and RPC, both ways) use the new certificate and CA; established
// ones keep theirs. Turning tls.http or tls.rpc on or off needs a restart.
func (a *Agent) reloadTLS(c *config.Config) error {
	if a.tls == nil {
		if c.TLSOn() {
			return fmt.Errorf("tls was off when the agent started: restart it to turn TLS on")
		}
		return nil
	}
	if !c.TLSOn() || c.TLS.EnableHTTP != a.config.TLS.EnableHTTP || c.TLS.EnableRPC != a.config.TLS.EnableRPC {
		return fmt.Errorf("tls.http and tls.rpc cannot change on reload: restart the agent")
	}
	m := c.TLSMaterial()
	m.Region = a.config.Region
	if err := a.tls.Reload(m); err != nil {
		return err
	}
	leaf := a.tls.Leaf()
	a.logger.Info("TLS certificates reloaded", "cert_file", m.CertFile, "serial", leaf.SerialNumber.String(), "not_after", leaf.NotAfter)
	return nil
}
