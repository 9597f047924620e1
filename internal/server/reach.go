package server

import (
	"crypto/subtle"
	"fmt"

	"github.com/drover-project/drover/internal/reach"
	droverrpc "github.com/drover-project/drover/internal/rpc"
)

// setupReach serves client agents' sessions and the tunnels to them on the
// RPC port (internal/reach): a node proves itself with its SecretID, and
// a server asked for a node whose session another server holds finds it
// among the Raft peers.
func (s *Server) setupReach() {
	s.reach = reach.NewHub(reach.HubConfig{
		Verify: s.verifyNodeSecret,
		Peers:  s.otherServers,
		Proto:  droverrpc.ProtoNodeTunnel,
		Logger: s.logger.Named("reach"),
		Dial:   s.config.RPCDialer.DialContext,
	})
	s.listener.Handle(droverrpc.ProtoNodeSession, s.reach.HandleSession)
	s.listener.Handle(droverrpc.ProtoNodeTunnel, s.reach.HandleTunnel)
}

// Reach is the hub of client agents' sessions held by this server.
func (s *Server) Reach() *reach.Hub { return s.reach }

func (s *Server) verifyNodeSecret(nodeID, secretID string) error {
	n, err := s.State().NodeByID(nil, nodeID)
	if err != nil {
		return err
	}
	if n == nil {
		return fmt.Errorf("node %s is not registered", nodeID)
	}
	if subtle.ConstantTimeCompare([]byte(n.SecretID), []byte(secretID)) != 1 {
		return fmt.Errorf("node %s: wrong secret", nodeID)
	}
	return nil
}

// otherServers lists the Raft peers' RPC addresses but this server's.
func (s *Server) otherServers() []string {
	peers, err := s.Peers()
	if err != nil {
		return nil
	}
	out := peers[:0]
	for _, p := range peers {
		if p != s.rpcAddr {
			out = append(out, p)
		}
	}
	return out
}
