package agent

import (
	"context"
	"net"
	"net/http"
	"strings"

	"github.com/drover-project/drover/internal/reach"
	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/structs"
)

// startNodeSession keeps this client's session to a server open, so any
// agent can reach its client API (internal/reach). api serves what the
// servers send; only the routes a node answers for others are served.
func (a *Agent) startNodeSession(api http.Handler) {
	if a.client == nil {
		return
	}
	cl := a.client
	a.nodeSession = reach.StartNode(reach.NodeConfig{
		Servers: a.sessionServers,
		Identity: func() (string, string) {
			n := cl.Node()
			return n.ID, n.SecretID
		},
		Handler: relayedRoutes(api),
		Proto:   droverrpc.ProtoNodeSession,
		Logger:  a.logger.Named("reach"),
		Dial:    a.dialRPC(),
	})
}

// sessionServers: the agent's own server when it runs one, else the
// configured servers.
func (a *Agent) sessionServers() []string {
	if a.server != nil {
		return []string{a.server.RPCAddr()}
	}
	return a.clientServers()
}

// relayedRoutes serves only the client routes over a node session.
func relayedRoutes(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/client/") || r.URL.Path == "/v1/agent/monitor" {
			api.ServeHTTP(w, r)
			return
		}
		http.Error(w, "only client routes are served over a node session", http.StatusNotFound)
	})
}

// nodeDialer opens pipes to other nodes' agents: through this agent's
// server, or through a configured server (which searches its peers).
type nodeDialer struct{ a *Agent }

func (d nodeDialer) DialNode(ctx context.Context, nodeID string) (net.Conn, error) {
	if d.a.server != nil {
		return d.a.server.Reach().DialNode(ctx, nodeID)
	}
	var err error = structs.NewErrCoded(503, "no servers known: set client.servers or -servers")
	for _, addr := range d.a.clientServers() {
		var c net.Conn
		if c, err = reach.DialTunnelVia(ctx, d.a.dialRPC(), addr, droverrpc.ProtoNodeTunnel, nodeID, true); err == nil {
			return c, nil
		}
	}
	return nil, err
}
