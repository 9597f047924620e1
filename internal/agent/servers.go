package agent

import (
	"github.com/drover-project/drover/internal/client/servers"
	droverrpc "github.com/drover-project/drover/internal/rpc"
)

// newServerManager builds a client-only agent's list of servers from
// client.servers; the client refreshes it from every heartbeat answer.
func (a *Agent) newServerManager(configured []string) *servers.Manager {
	return servers.New(servers.Config{
		Servers: configured,
		Call:    a.pool.Call,
		// Each call has a deadline, and a read carries its HTTP
		// request's context: a blocking query ends, here and on the
		// server, when its client goes.
		CallContext:   a.pool.CallContext,
		IsServerError: droverrpc.IsServerError,
		IsNotSent:     droverrpc.IsConnectError,
	})
}

// RPC routes a call to a server: in-process when this agent is one,
// otherwise through the server manager (the current server, then every
// other known one, with backoff while none answers).
func (a *Agent) RPC(method string, args, reply any) error {
	if a.server != nil {
		return a.server.RPC(method, args, reply)
	}
	if a.servers == nil {
		return servers.ErrNoServers
	}
	return a.servers.Call(method, args, reply)
}

// serverLearner is what the client sees of the agent: it hands over the
// servers each heartbeat answer names (client.ServerLearner).
type serverLearner struct{ a *Agent }

func (l serverLearner) RPC(method string, args, reply any) error { return l.a.RPC(method, args, reply) }
func (l serverLearner) SetServers(addrs []string) {
	if l.a.server == nil && l.a.servers != nil {
		l.a.servers.SetServers(addrs)
	}
}
