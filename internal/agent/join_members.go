package agent

import (
	"net"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// membership answers /v1/agent/{join,force-leave,servers} (httpapi.Membership).
type membership struct{ a *Agent }

var errNotServer = structs.NewErrCoded(501, "this agent runs no server: join, force-leave and the gossip keyring are server operations")

func (m *membership) Join(addrs []string) (int, error) {
	if m.a.server == nil {
		return 0, errNotServer
	}
	return m.a.server.Join(addrs)
}

func (m *membership) ForceLeave(node string, prune bool) error {
	if m.a.server == nil {
		return errNotServer
	}
	return m.a.server.RemoveFailedNode(node, prune)
}

func (m *membership) ClientServers() ([]string, error) {
	if m.a.client == nil {
		return nil, structs.NewErrCoded(501, "this agent runs no client: it has no server list")
	}
	if m.a.server != nil {
		return []string{m.a.server.RPCAddr()}, nil
	}
	return m.a.clientServers(), nil
}

func (m *membership) SetClientServers(addrs []string) error {
	if m.a.client == nil {
		return structs.NewErrCoded(501, "this agent runs no client: it has no server list")
	}
	if m.a.server != nil {
		return structs.NewErrCoded(400, "this agent's client uses its own server; the server list of a -dev or server+client agent cannot be changed")
	}
	var out []string
	for _, s := range addrs {
		addr := withDefaultPort(s, 4647)
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return structs.NewErrCoded(400, "invalid server address %q: %v", s, err)
		}
		out = append(out, addr)
	}
	if len(out) == 0 {
		return structs.NewErrCoded(400, "missing server addresses: give at least one ?address=")
	}
	if m.a.servers == nil {
		return structs.NewErrCoded(500, "this client agent has no server list")
	}
	m.a.servers.SetServers(out)
	return nil
}

// clientServers is a copy of a client-only agent's server list, the one
// it talks to first.
func (a *Agent) clientServers() []string {
	if a.servers == nil {
		return nil
	}
	return a.servers.Servers()
}

func (m *membership) Keyring(op, key string) (*api.KeyringResponse, error) {
	if m.a.server == nil {
		return nil, errNotServer
	}
	resp, err := m.a.server.KeyringOp(op, key)
	if err != nil {
		return nil, err
	}
	return &api.KeyringResponse{Messages: resp.Messages, Keys: resp.Keys, NumNodes: resp.NumNodes}, nil
}
