package server

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// The operator's Raft view from a follower (forwarded to the leader) lists
// every server once, with the one leader; removing a peer by address takes
// it out; an unknown peer and the last voter are refused.
func TestOperatorRaftPeers(t *testing.T) {
	servers := testCluster(t, 3)
	leader := waitLeader(t, servers, 10*time.Second, "a leader")
	var follower *Server
	for _, s := range servers {
		if s != leader {
			follower = s
		}
	}

	var cfg structs.RaftConfigurationResponse
	if err := follower.RPC("Operator.RaftGetConfiguration", &structs.GenericRequest{}, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 3 {
		t.Fatalf("configuration %+v", cfg)
	}
	leaders := 0
	for _, s := range cfg.Servers {
		if !s.Voter || s.RaftProtocol != "3" || s.Address == "" {
			t.Fatalf("server %+v", s)
		}
		if s.Leader {
			leaders++
			if s.ID != leader.config.NodeID || s.Node != leader.config.NodeName+".global" {
				t.Fatalf("leader entry %+v, leader %s", s, leader.config.NodeID)
			}
		}
	}
	if leaders != 1 {
		t.Fatalf("%d leaders in %+v", leaders, cfg.Servers)
	}

	var reply struct{}
	err := follower.RPC("Operator.RaftRemovePeerByID", &structs.RaftPeerRequest{ID: "nope"}, &reply)
	if err == nil || !strings.Contains(err.Error(), `id "nope" was not found in the Raft configuration`) {
		t.Fatalf("unknown id: %v", err)
	}
	if err := follower.RPC("Operator.RaftRemovePeerByAddress", &structs.RaftPeerRequest{Address: follower.RPCAddr()}, &reply); err != nil {
		t.Fatal(err)
	}
	cfg = structs.RaftConfigurationResponse{}
	if err := leader.RPC("Operator.RaftGetConfiguration", &structs.GenericRequest{}, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 2 {
		t.Fatalf("after removal: %+v", cfg.Servers)
	}
	for _, s := range cfg.Servers {
		if s.Address == follower.RPCAddr() {
			t.Fatalf("removed peer still listed: %+v", cfg.Servers)
		}
	}
}

// A lone server refuses to remove itself: the cluster could never elect
// a leader again.
func TestOperatorRaftKeepsTheLastVoter(t *testing.T) {
	s := testServer(t, nil)
	var reply struct{}
	err := s.RPC("Operator.RaftRemovePeerByID", &structs.RaftPeerRequest{ID: s.config.NodeID}, &reply)
	if err == nil || !strings.Contains(err.Error(), "is the only voter") {
		t.Fatalf("removing the last voter: %v", err)
	}
	err = s.RPC("Operator.RaftRemovePeerByID", &structs.RaftPeerRequest{}, &reply)
	if err == nil || !strings.Contains(err.Error(), "must name the peer") {
		t.Fatalf("no peer named: %v", err)
	}
}

// In an outage (no leader: two of three servers gone) the operator still
// reads the Raft configuration with -stale from the server left, as Nomad
// answers it (`operator raft list-peers -stale`, the first step of an
// outage recovery); without -stale the read waits for a leader and says
// there is none.
func TestOperatorRaftPeersStaleWithoutLeader(t *testing.T) {
	servers := testClusterWith(t, 3, func(i int, cfg *Config) { cfg.RPCHoldTimeout = 500 * time.Millisecond })
	leader := waitLeader(t, servers, 10*time.Second, "a leader")
	var left *Server
	for _, s := range servers {
		if s != leader && left == nil {
			left = s
			continue
		}
		s.Shutdown()
	}
	waitFor(t, 10*time.Second, "no leader", func() bool { return left.LeaderAddr() == "" })

	var cfg structs.RaftConfigurationResponse
	err := left.RPC("Operator.RaftGetConfiguration", &structs.GenericRequest{}, &cfg)
	if err == nil || err.Error() != structs.ErrNoLeader.Error() {
		t.Fatalf("consistent read without a leader: %v, want %q", err, structs.ErrNoLeader)
	}
	cfg = structs.RaftConfigurationResponse{}
	stale := &structs.GenericRequest{QueryOptions: structs.QueryOptions{AllowStale: true}}
	if err := left.RPC("Operator.RaftGetConfiguration", stale, &cfg); err != nil {
		t.Fatalf("stale read without a leader: %v", err)
	}
	if len(cfg.Servers) != 3 {
		t.Fatalf("stale configuration %+v, want the 3 servers", cfg.Servers)
	}
	for _, s := range cfg.Servers {
		if s.Leader {
			t.Fatalf("a leader listed while there is none: %+v", s)
		}
	}
}
