package server

import (
	"net"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// A server restarted on its data dir holds only its snapshot until it leads
// and has replayed its log. Until then even stale reads must not answer from
// that state ("node not found", an empty list): they fail with the
// retryable ErrNoLeader, and once it is ready they answer with what it has.
func TestRestartedServerServesNoStaleReadsUntilRestored(t *testing.T) {
	dir := t.TempDir()
	const nodeID = "11111111-2222-3333-4444-555555555555"
	start := func(hold time.Duration) *Server {
		t.Helper()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.NodeID = nodeID
		cfg.DataDir = dir // bolt log, no snapshot: state comes back from the log
		cfg.RPCListener = ln
		cfg.NumSchedulers = 1
		cfg.RPCHoldTimeout = hold
		s, err := NewServer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start(time.Second)
	waitFor(t, 10*time.Second, "leadership", func() bool { return s.IsLeader() })
	node := testNode(t, s, 1000, 1024)
	register(t, s, testJob("web", 0))
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}

	// Raft's default timeouts: at least a second before it elects itself.
	s = start(20 * time.Millisecond)
	defer s.Shutdown()
	stale := structs.QueryOptions{AllowStale: true}
	var noLeader int
	for {
		leading := s.IsLeader()
		var nr structs.SingleNodeResponse
		nerr := s.RPC("Node.GetNode", &structs.NodeSpecificRequest{NodeID: node.ID, QueryOptions: stale}, &nr)
		var lr structs.NodeListResponse
		lerr := s.RPC("Node.List", &structs.NodeListRequest{QueryOptions: stale}, &lr)
		var jr structs.SingleJobResponse
		jerr := s.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: "web", QueryOptions: structs.QueryOptions{AllowStale: true, Namespace: "default"}}, &jr)
		for _, err := range []error{nerr, lerr, jerr} {
			if err == nil {
				continue
			}
			if err.Error() != structs.ErrNoLeader.Error() {
				t.Fatalf("stale read right after restart: %v, want %v", err, structs.ErrNoLeader)
			}
			noLeader++
		}
		if nerr == nil && nr.Node == nil {
			t.Fatal("stale Node.GetNode right after restart: node not found")
		}
		if lerr == nil && len(lr.Nodes) != 1 {
			t.Fatalf("stale Node.List right after restart: %d nodes, want 1", len(lr.Nodes))
		}
		if jerr == nil && jr.Job == nil {
			t.Fatal("stale Job.GetJob right after restart: job not found")
		}
		if leading {
			if nerr != nil || lerr != nil || jerr != nil {
				t.Fatalf("leader with its state restored refused reads: %v %v %v", nerr, lerr, jerr)
			}
			break
		}
	}
	if noLeader == 0 {
		t.Fatal("no read happened before the restarted server was ready: the test did not test anything")
	}
}

// Followers become ready for local stale reads once they have heard from the
// leader and applied what it committed (else every stale read would go to
// the leader for ever).
func TestFollowersBecomeReadyForStaleReads(t *testing.T) {
	servers := testCluster(t, 3)
	var leader *Server
	waitFor(t, 10*time.Second, "a leader", func() bool {
		leader = currentLeader(servers)
		return leader != nil && leader.IsLeader()
	})
	testNode(t, leader, 1000, 1024)
	for _, s := range servers {
		waitFor(t, 10*time.Second, "server ready", s.stateReady)
		var lr structs.NodeListResponse
		if err := s.RPC("Node.List", &structs.NodeListRequest{QueryOptions: structs.QueryOptions{AllowStale: true}}, &lr); err != nil {
			t.Fatal(err)
		}
	}
}
