package server

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/structs"
)

// Forwarding and stale reads in a three-server cluster, then with no leader
// (two servers cut off in the Raft transport): a follower forwards writes
// and consistent reads to the leader; it serves ?stale reads itself, saying
// how long ago it heard from a leader (X-Nomad-LastContact) and whether it
// knows one (X-Nomad-KnownLeader); with no leader, writes and consistent
// reads wait RPCHoldTimeout and then answer "No cluster leader" instead of
// hanging, while stale reads still answer.
func TestForwardingStaleReadsAndNoLeader(t *testing.T) {
	const hold = 700 * time.Millisecond
	f := newFaults()
	servers := testClusterWith(t, 3, func(i int, cfg *Config) {
		self := cfg.RPCListener.Addr().String()
		cfg.wrapRaftTransport = func(inner raft.Transport) raft.Transport {
			return &faultTransport{Transport: inner, f: f, self: self}
		}
		cfg.RPCHoldTimeout = hold
	})
	leader := waitLeader(t, servers, 10*time.Second, "a leader")
	var followers []*Server
	for _, s := range servers {
		if s != leader {
			followers = append(followers, s)
		}
	}
	fol := followers[0]

	// A write through a follower is forwarded and committed.
	register(t, fol, testJob("via-follower", 0))
	if !jobExists(t, leader, "via-follower") {
		t.Fatal("write through a follower is not on the leader")
	}
	// A consistent read on a follower is the leader's answer.
	var lr structs.JobListResponse
	if err := fol.RPC("Job.List", &structs.JobListRequest{}, &lr); err != nil || len(lr.Jobs) != 1 || !lr.KnownLeader || lr.LastContact != 0 {
		t.Fatalf("consistent read on a follower: %v, %d jobs, meta %+v", err, len(lr.Jobs), lr.QueryMeta)
	}
	// Stale reads: the leader says 0 and known; a follower its own contact.
	stale := structs.QueryOptions{AllowStale: true}
	if err := leader.RPC("Job.List", &structs.JobListRequest{QueryOptions: stale}, &lr); err != nil || !lr.KnownLeader || lr.LastContact != 0 {
		t.Fatalf("stale read on the leader: %v, meta %+v", err, lr.QueryMeta)
	}
	waitFor(t, 5*time.Second, "the follower holds the write", func() bool { return jobExists(t, fol, "via-follower") })
	if err := fol.RPC("Job.List", &structs.JobListRequest{QueryOptions: stale}, &lr); err != nil || !lr.KnownLeader || lr.LastContact > 2*time.Second {
		t.Fatalf("stale read on a follower: %v, meta %+v", err, lr.QueryMeta)
	}

	// No leader: the leader and one follower are cut off from everyone.
	f.isolate(leader.RPCAddr(), true)
	f.isolate(followers[1].RPCAddr(), true)
	cutAt := time.Now()
	waitFor(t, 10*time.Second, "no leader anywhere", func() bool {
		for _, s := range servers {
			if s.raft.State() == raft.Leader || s.IsLeader() {
				return false
			}
		}
		return fol.LeaderAddr() == ""
	})
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"write", func() error {
			var rr structs.JobRegisterResponse
			return fol.RPC("Job.Register", &structs.JobRegisterRequest{Job: testJob("no-leader", 0)}, &rr)
		}},
		{"consistent read", func() error {
			var lr structs.JobListResponse
			return fol.RPC("Job.List", &structs.JobListRequest{}, &lr)
		}},
	} {
		start := time.Now()
		err := tc.do()
		took := time.Since(start)
		if err == nil || err.Error() != structs.ErrNoLeader.Error() {
			t.Fatalf("%s with no leader: %v, want %q", tc.name, err, structs.ErrNoLeader)
		}
		if took < hold || took > hold+10*time.Second {
			t.Fatalf("%s with no leader answered after %s; RPCHoldTimeout is %s", tc.name, took, hold)
		}
	}
	if err := fol.RPC("Job.List", &structs.JobListRequest{QueryOptions: stale}, &lr); err != nil || len(lr.Jobs) != 1 {
		t.Fatalf("stale read with no leader: %v, %d jobs", err, len(lr.Jobs))
	}
	if lr.KnownLeader || lr.LastContact < time.Since(cutAt)-time.Second || lr.LastContact > time.Since(cutAt)+time.Second {
		t.Fatalf("stale read with no leader: meta %+v, cut off %s ago", lr.QueryMeta, time.Since(cutAt))
	}

	// Healed: a leader again, writes through any server.
	f.isolate(leader.RPCAddr(), false)
	f.isolate(followers[1].RPCAddr(), false)
	waitFor(t, 15*time.Second, "a leader after healing", func() bool { return currentLeader(servers) != nil && currentLeader(servers).IsLeader() })
	for _, s := range servers {
		register(t, s, testJob("healed-"+s.config.NodeName, 0))
	}
}

// A write reaching a follower right after the leader died (the follower
// still names it as leader) waits for the next leader instead of failing
// with the dead leader's connection error.
func TestForwardWaitsForNextLeaderWhenLeaderDies(t *testing.T) {
	servers := testClusterWith(t, 3, func(i int, cfg *Config) {
		rc := *cfg.RaftConfig
		// The followers take a while to notice the leader is gone.
		rc.HeartbeatTimeout, rc.ElectionTimeout = time.Second, time.Second
		rc.LeaderLeaseTimeout = 500 * time.Millisecond
		cfg.RaftConfig = &rc
	})
	leader := waitLeader(t, servers, 20*time.Second, "a leader")
	var fol *Server
	for _, s := range servers {
		if s != leader {
			fol = s
			break
		}
	}
	dead := leader.RPCAddr()
	leader.Shutdown()
	if got := fol.LeaderAddr(); got != dead {
		t.Skipf("the follower already forgot the dead leader (names %q): nothing to test", got)
	}
	var rr structs.JobRegisterResponse
	if err := fol.RPC("Job.Register", &structs.JobRegisterRequest{Job: testJob("after-leader-died", 0)}, &rr); err != nil {
		t.Fatalf("write through a follower right after the leader died: %v", err)
	}
	if fol.LeaderAddr() == dead {
		t.Fatalf("write answered while the follower still names the dead leader %q", dead)
	}
	waitFor(t, 10*time.Second, "the write committed by the new leader reaching the follower", func() bool {
		return jobExists(t, fol, "after-leader-died")
	})
}

// A consistent read a follower forwarded to the leader whose connection
// then broke (the leader took the request and the connection closed before
// it answered: the leader restarting, a broken link) is sent again, as a
// read safely can be: it answered the transport's "unexpected EOF".
func TestForwardedReadSentAgainWhenTheConnectionBreaks(t *testing.T) {
	lns := map[int]*cutListener{}
	servers := testClusterWith(t, 3, func(i int, cfg *Config) {
		l := &cutListener{Listener: cfg.RPCListener}
		lns[i] = l
		cfg.RPCListener = l
		cfg.NumSchedulers = 0 // no worker calls share the follower's session to the leader
	})
	leader := waitLeader(t, servers, 20*time.Second, "a leader")
	var fol *Server
	var cut *cutListener
	for i, s := range servers {
		if s == leader {
			cut = lns[i]
		} else if fol == nil {
			fol = s
		}
	}
	register(t, fol, testJob("before-cut", 0)) // the follower's session to the leader is up
	cut.cutOnce.Store(true)
	var lr structs.JobListResponse
	if err := fol.RPC("Job.List", &structs.JobListRequest{}, &lr); err != nil || len(lr.Jobs) != 1 {
		t.Fatalf("consistent read through a follower whose connection to the leader broke: %v, %d jobs", err, len(lr.Jobs))
	}
	if cut.cutOnce.Load() {
		t.Fatal("the connection was never cut: the test tested nothing")
	}
}
