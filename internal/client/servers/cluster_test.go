package servers_test

import (
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/client/servers"
	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/server"
	"github.com/drover-project/drover/internal/structs"
)

// threeServers starts an in-process cluster of three servers on loopback.
func threeServers(t *testing.T) []*server.Server {
	t.Helper()
	var lns []net.Listener
	var peers []raft.Server
	for i := 0; i < 3; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		peers = append(peers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(uuid.NewString()), Address: raft.ServerAddress(ln.Addr().String())})
	}
	out := make([]*server.Server, 3)
	for i := range out {
		rc := raft.DefaultConfig()
		rc.HeartbeatTimeout, rc.ElectionTimeout = 100*time.Millisecond, 100*time.Millisecond
		rc.LeaderLeaseTimeout, rc.CommitTimeout = 50*time.Millisecond, 5*time.Millisecond
		cfg := server.DefaultConfig()
		cfg.NodeID, cfg.NodeName = string(peers[i].ID), fmt.Sprintf("s%d", i)
		cfg.DevMode, cfg.RPCListener, cfg.Peers, cfg.RaftConfig, cfg.NumSchedulers = true, lns[i], peers, rc, 1
		cfg.RPCHoldTimeout = time.Second
		s, err := server.NewServer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = s
		t.Cleanup(func() { s.Shutdown() })
	}
	return out
}

func testNode() *structs.Node {
	return &structs.Node{ID: uuid.NewString(), SecretID: uuid.NewString(), Name: "n1", Datacenter: "dc1",
		Attributes: map[string]string{"kernel.name": "linux"}}
}

// Against real servers: a client configured with one server learns the
// three from the registration answer, and when its server dies its
// heartbeats go on through the others.
func TestManager_RealClusterLearnsAndFailsOver(t *testing.T) {
	cluster := threeServers(t)
	pool := droverrpc.NewPool(time.Second)
	t.Cleanup(pool.Shutdown)
	first := cluster[0]
	m := servers.New(servers.Config{Servers: []string{first.RPCAddr()}, Call: pool.Call, IsServerError: droverrpc.IsServerError, IsNotSent: droverrpc.IsConnectError})
	t.Cleanup(m.Stop)

	node := testNode()
	var resp structs.NodeUpdateResponse
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := m.Call("Node.Register", &structs.NodeRegisterRequest{Node: node}, &resp)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("registering: %v", err)
		}
	}
	var learned []string
	for _, s := range resp.Servers {
		learned = append(learned, s.RPCAdvertiseAddr)
	}
	m.SetServers(learned)
	if got := m.Servers(); len(got) != 3 || !slices.Contains(got, first.RPCAddr()) {
		t.Fatalf("servers after registering: %v (the answer named %v)", got, learned)
	}
	// Make the first server the one in use, then kill it.
	for m.Current() != first.RPCAddr() {
		m.NotifyFailed(m.Current())
	}

	first.Shutdown()
	deadline = time.Now().Add(30 * time.Second)
	for {
		var hb structs.NodeUpdateResponse
		err := m.Call("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: node.ID, SecretID: node.SecretID, Status: structs.NodeStatusReady}, &hb)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("heartbeat after the first server died: %v", err)
		}
	}
	if m.Current() == first.RPCAddr() {
		t.Fatalf("still on the dead server %s: %v", first.RPCAddr(), m.Servers())
	}
}
