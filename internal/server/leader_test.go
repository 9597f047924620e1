package server

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/structs"
	"github.com/drover-project/drover/internal/testport"
)

// testCluster starts n servers whose Raft rides on their real RPC ports.
func testCluster(t *testing.T, n int) []*Server {
	t.Helper()
	return testClusterWith(t, n, nil)
}

// testClusterWith is testCluster with mut applied to each server's config.
func testClusterWith(t *testing.T, n int, mut func(i int, cfg *Config)) []*Server {
	t.Helper()
	var lns []net.Listener
	var peers []raft.Server
	ids := make([]string, n)
	for i := 0; i < n; i++ {
		// testport's ports, outside the ephemeral range: a test may shut a
		// server down and start it again on its address, and a port from
		// :0 could meanwhile be taken as an outgoing connection's source
		// port (the other servers keep dialing it).
		p, err := testport.Take()
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ids[i] = uuid.NewString()
		peers = append(peers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(ids[i]), Address: raft.ServerAddress(ln.Addr().String())})
	}
	servers := make([]*Server, n)
	for i := 0; i < n; i++ {
		rc := raft.DefaultConfig()
		// Short enough for quick elections, long enough that a loaded CI
		// machine (race detector, two cores, other test binaries) does not
		// depose the leader: the three servers share one process, and a
		// lease of 50 ms was shorter than the pauses it sees there, so
		// tests that took the leader and then wrote to it or transferred
		// its leadership met a leader already gone.
		rc.HeartbeatTimeout = 500 * time.Millisecond
		rc.ElectionTimeout = 500 * time.Millisecond
		rc.LeaderLeaseTimeout = 250 * time.Millisecond
		rc.CommitTimeout = 5 * time.Millisecond
		cfg := DefaultConfig()
		cfg.NodeID = ids[i]
		cfg.NodeName = fmt.Sprintf("s%d", i)
		cfg.DevMode = true // in-memory log; the transport is real TCP
		cfg.RPCListener = lns[i]
		cfg.Peers = peers
		cfg.RaftConfig = rc
		cfg.NumSchedulers = 1
		noHeartbeatExpiry(cfg)
		if mut != nil {
			mut(i, cfg)
		}
		s, err := NewServer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		servers[i] = s
		t.Cleanup(func() { s.Shutdown() })
	}
	return servers
}

// waitLeader waits for a server that leads in Raft and has established its
// leadership (IsLeader), and returns it: the one the poll saw, not a second
// look that may find none (an election in between).
func waitLeader(t *testing.T, servers []*Server, d time.Duration, what string) *Server {
	t.Helper()
	var l *Server
	waitFor(t, d, what, func() bool { l = currentLeader(servers); return l != nil && l.IsLeader() })
	return l
}

func currentLeader(servers []*Server) *Server {
	for _, s := range servers {
		if s.raft.State() == raft.Leader {
			return s
		}
	}
	return nil
}

// TestLeadershipFlapping: leadership moves 100 times in quick succession
// while RPCs keep flowing. Raft must never block on our leadership
// handling, every RPC must return, and at the end the leader-only services
// must run exactly once, on the leader (seed 004).
func TestLeadershipFlapping(t *testing.T) {
	if testing.Short() {
		t.Skip("long-running cluster test")
	}
	servers := testCluster(t, 3)
	waitFor(t, 10*time.Second, "first leader", func() bool { return currentLeader(servers) != nil })

	// Load: every server keeps answering reads and forwarding writes.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var calls, slow atomic.Int64
	for i, s := range servers {
		wg.Add(1)
		go func(i int, s *Server) {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				var lr structs.JobListResponse
				s.RPC("Job.List", &structs.JobListRequest{}, &lr)
				var rr structs.JobRegisterResponse
				s.RPC("Job.Register", &structs.JobRegisterRequest{Job: testJob(fmt.Sprintf("j%d-%d", i, n%5), 0)}, &rr)
				var leader string
				s.RPC("Status.Leader", &structs.GenericRequest{}, &leader)
				if time.Since(start) > 15*time.Second {
					slow.Add(1)
				}
				calls.Add(1)
			}
		}(i, s)
	}

	transfers := 0
	for transfers < 100 {
		l := currentLeader(servers)
		if l == nil {
			time.Sleep(time.Millisecond)
			continue
		}
		done := make(chan error, 1)
		go func() { done <- l.raft.LeadershipTransfer().Error() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("leadership transfer %d hung: raft is blocked", transfers)
		}
		transfers++
	}
	close(stop)
	waitDone := make(chan struct{})
	go func() { wg.Wait(); close(waitDone) }()
	select {
	case <-waitDone:
	case <-time.After(30 * time.Second):
		t.Fatal("RPC callers never returned after flapping")
	}
	if slow.Load() > 0 {
		t.Fatalf("%d RPC rounds took longer than 15s", slow.Load())
	}
	if calls.Load() == 0 {
		t.Fatal("no RPCs completed during flapping")
	}

	// Settle: exactly one server runs the leader services, and it leads.
	waitFor(t, 15*time.Second, "leader services on exactly the leader", func() bool {
		l := currentLeader(servers)
		if l == nil || !l.IsLeader() {
			return false
		}
		running := 0
		for _, s := range servers {
			up := s.servicesUp.Load() == 1
			if up {
				running++
			}
			if up != (s == l) || s.broker.Enabled() != (s == l) || s.planQueue.Enabled() != (s == l) || s.heartbeats.Enabled() != (s == l) ||
				s.deployWatcher.Enabled() != (s == l) {
				return false
			}
		}
		return running == 1
	})

	// Raft still commits, through a follower's forwarding too.
	for _, s := range servers {
		var rr structs.JobRegisterResponse
		if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: testJob("after-"+s.config.NodeName, 0)}, &rr); err != nil {
			t.Fatalf("write via %s after flapping: %v", s.config.NodeName, err)
		}
	}
	total := int64(0)
	for _, s := range servers {
		total += s.establishCount.Load()
	}
	t.Logf("%d transfers, %d RPC rounds, leader services established %d times in total", transfers, calls.Load(), total)
}
