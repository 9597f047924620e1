package agent

import (
	"github.com/drover-project/drover/internal/client/servers"
	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/structs"
)

// newServerManager builds a client-only agent's list of servers from
// client.servers; the client refreshes it from every heartbeat answer.
func (a *Agent) newServerManager(configured []string) *servers.Manager {
	return servers.New(servers.Config{
		Servers:       configured,
		Call:          a.pool.Call,
		IsServerError: droverrpc.IsServerError,
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

// Servers lists the servers a client-only agent knows, the one it talks to
// first; on a server agent, the Raft peers' RPC addresses.
func (a *Agent) Servers() []string {
	if a.server != nil {
		peers, _ := a.server.Peers()
		return peers
	}
	if a.servers == nil {
		return nil
	}
	return a.servers.Servers()
}

// SetServers replaces the servers a client-only agent knows (PUT
// /v1/agent/servers, and every heartbeat answer). A server agent has no
// such list: it is ignored there. An empty list is refused.
func (a *Agent) SetServers(addrs []string) error {
	if len(addrs) == 0 {
		return structs.NewErrCoded(400, "missing server addresses")
	}
	if a.server != nil || a.servers == nil {
		return nil
	}
	norm := make([]string, 0, len(addrs))
	for _, s := range addrs {
		norm = append(norm, withDefaultPort(s, 4647))
	}
	a.servers.SetServers(norm)
	return nil
}

// serverLearner is what the client sees of the agent: it hands over the
// servers each heartbeat answer names (client.ServerLearner).
type serverLearner struct{ a *Agent }

func (l serverLearner) RPC(method string, args, reply any) error { return l.a.RPC(method, args, reply) }
func (l serverLearner) SetServers(addrs []string)                { _ = l.a.SetServers(addrs) }
