package server

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"

	"github.com/drover-project/drover/internal/structs"
)

// gossipServer starts a server with Raft on disk in dir, gossip on a free
// loopback port and bootstrap_expect = expect.
func gossipServer(t *testing.T, name, dir string, expect int) *Server {
	t.Helper()
	return gossipServerIn(t, name, dir, expect, DefaultConfig().Region)
}

// gossipServerIn is gossipServer in a given region.
func gossipServerIn(t *testing.T, name, dir string, expect int, region string, mut ...func(*Config)) *Server {
	t.Helper()
	return gossipServerWith(t, name, dir, expect, region, func(cfg *Config) {
		for _, m := range mut {
			m(cfg)
		}
	})
}

// gossipServerWith is gossipServerIn with mod applied to the config.
func gossipServerWith(t *testing.T, name, dir string, expect int, region string, mod func(*Config)) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc := raft.DefaultConfig()
	// As testClusterWith's: elections stay quick, and a loaded CI machine
	// does not depose a leader.
	rc.HeartbeatTimeout = 500 * time.Millisecond
	rc.ElectionTimeout = 500 * time.Millisecond
	rc.LeaderLeaseTimeout = 250 * time.Millisecond
	rc.CommitTimeout = 5 * time.Millisecond
	cfg := DefaultConfig()
	cfg.NodeName = name
	cfg.NodeID = name + "-id"
	cfg.Region = region
	cfg.DataDir = dir
	cfg.RPCListener = ln
	cfg.RaftConfig = rc
	cfg.NumSchedulers = 1
	cfg.BootstrapExpect = expect
	cfg.SerfBindAddr = "127.0.0.1:0"
	cfg.SerfTuning = func(_ *serf.Config, mc *memberlist.Config) {
		l := memberlist.DefaultLocalConfig()
		mc.ProbeInterval, mc.ProbeTimeout, mc.GossipInterval, mc.SuspicionMult = l.ProbeInterval, l.ProbeTimeout, l.GossipInterval, l.SuspicionMult
	}
	if mod != nil {
		mod(cfg)
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	return s
}

func serfAddr(s *Server) string {
	m, _ := s.LocalMember()
	return net.JoinHostPort(m.Addr.String(), strconv.Itoa(int(m.Port)))
}

func raftServers(s *Server) []raft.Server {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	return f.Configuration().Servers
}

// bootstrap_expect = 3: two servers that see each other wait; the third
// joining bootstraps Raft with all three as voters; a server that leaves
// gracefully is removed from Raft by the leader; a restarted server with
// Raft state never bootstraps again.
func TestBootstrapExpectAndLeave(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	s1 := gossipServer(t, "a", dirs[0], 3)
	s2 := gossipServer(t, "b", dirs[1], 3)
	if n, err := s2.Join([]string{serfAddr(s1)}); err != nil || n != 1 {
		t.Fatalf("join: %d, %v", n, err)
	}
	waitFor(t, 10*time.Second, "two members on both", func() bool {
		return len(s1.Members()) == 2 && len(s2.Members()) == 2
	})
	s1.maybeBootstrap()
	s2.maybeBootstrap()
	if len(raftServers(s1)) != 0 || len(raftServers(s2)) != 0 {
		t.Fatalf("bootstrapped with 2 of 3 expected servers: %v / %v", raftServers(s1), raftServers(s2))
	}

	s3 := gossipServer(t, "c", dirs[2], 3)
	if _, err := s3.Join([]string{serfAddr(s1)}); err != nil {
		t.Fatal(err)
	}
	servers := []*Server{s1, s2, s3}
	// A fresh cluster may still settle its leadership: write through
	// whichever server leads (the one polled first may have lost it by the
	// time of the write).
	var leader *Server
	waitFor(t, 20*time.Second, "a leader with three voters taking a write", func() bool {
		leader = currentLeader(servers)
		if leader == nil || len(raftServers(leader)) != 3 {
			return false
		}
		_, _, err := leader.raftApply(structs.AutopilotConfigRequestType, &structs.AutopilotSetConfigRequest{Config: *structs.DefaultAutopilotConfig()})
		return err == nil
	})

	// A follower leaves gracefully: the leader takes it out of Raft.
	var follower *Server
	for _, s := range servers {
		if s != leader {
			follower = s
			break
		}
	}
	follower.Leave()
	waitFor(t, 20*time.Second, "the leaver removed from Raft", func() bool {
		for _, srv := range raftServers(leader) {
			if string(srv.ID) == follower.config.NodeID {
				return false
			}
		}
		return len(raftServers(leader)) == 2
	})
	follower.Shutdown()

	// Restarted on its Raft state, a server counts as bootstrapped at once
	// and never bootstraps again.
	var restartDir string
	for i, s := range servers {
		if s == follower {
			restartDir = dirs[i]
		}
	}
	again := gossipServer(t, follower.config.NodeName, restartDir, 3)
	if !again.bootstrapped.Load() {
		t.Fatal("a server with Raft state on disk is not marked bootstrapped")
	}
}

// Servers in bootstrap mode (bootstrap_expect = 1) are never merged: the
// leader refuses to add a second one to its Raft.
func TestTwoBootstrapServersAreNotMerged(t *testing.T) {
	s1 := gossipServer(t, "x", t.TempDir(), 1)
	s2 := gossipServer(t, "y", t.TempDir(), 1)
	waitFor(t, 10*time.Second, "both leading alone", func() bool { return s1.IsLeader() && s2.IsLeader() })
	if _, err := s2.Join([]string{serfAddr(s1)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "both in gossip", func() bool { return len(s1.Members()) == 2 })
	for _, m := range s1.Members() {
		if _, ok := parseServer(m); !ok {
			t.Fatalf("member %s has no server tags: %v", m.Name, m.Tags)
		}
		s1.reconcileMember(m)
	}
	if n := len(raftServers(s1)); n != 1 {
		t.Fatalf("a second bootstrap-mode server was added to Raft: %d servers", n)
	}
	if !s1.IsLeader() || !s2.IsLeader() {
		t.Fatal("a bootstrap-mode server lost its leadership")
	}
}

// A leader that leaves gracefully removes itself from Raft first: the two
// others elect a leader between them and the leaver is in no configuration.
func TestLeaderLeaves(t *testing.T) {
	var servers []*Server
	for _, name := range []string{"l1", "l2", "l3"} {
		servers = append(servers, gossipServer(t, name, t.TempDir(), 3))
	}
	for _, s := range servers[1:] {
		if _, err := s.Join([]string{serfAddr(servers[0])}); err != nil {
			t.Fatal(err)
		}
	}
	var old *Server
	waitFor(t, 20*time.Second, "a leader with three voters", func() bool {
		old = currentLeader(servers)
		return old != nil && len(raftServers(old)) == 3
	})
	old.Leave()
	var rest []*Server
	for _, s := range servers {
		if s != old {
			rest = append(rest, s)
		}
	}
	waitFor(t, 20*time.Second, "a new leader among the two others without the leaver", func() bool {
		l := currentLeader(rest)
		if l == nil || len(raftServers(l)) != 2 {
			return false
		}
		for _, srv := range raftServers(l) {
			if string(srv.ID) == old.config.NodeID {
				return false
			}
		}
		return true
	})
	old.Shutdown()
	// The two may still settle leadership between them after the leaver's
	// shutdown: write through whichever leads.
	var lastErr error
	waitFor(t, 20*time.Second, "a write after the leader left", func() bool {
		l := currentLeader(rest)
		if l == nil {
			return false
		}
		_, _, lastErr = l.raftApply(structs.AutopilotConfigRequestType, &structs.AutopilotSetConfigRequest{Config: *structs.DefaultAutopilotConfig()})
		return lastErr == nil
	})
}

// logBuffer collects a server's log for a test (written concurrently).
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func withLog(buf *logBuffer) func(*Config) {
	return func(cfg *Config) {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Info})
	}
}

// A server started with bootstrap_expect = 3 alone waits for the others,
// and its log says so (how many it expects, which it sees); servers that
// disagree on bootstrap_expect say that instead. Each reason is logged
// once, not on every retry. Before, a waiting server logged nothing but
// Raft's "no known peers, aborting election", and a disagreement was
// logged every 2 s.
func TestBootstrapExpectSaysWhyItWaits(t *testing.T) {
	var aLog, bLog logBuffer
	a := gossipServerIn(t, "a", t.TempDir(), 3, DefaultConfig().Region, withLog(&aLog))
	const waiting = "bootstrap_expect: waiting for more servers to join the gossip pool before electing a leader: expect=3 found=1 servers=a.global"
	waitFor(t, 10*time.Second, "the alone server saying why it waits", func() bool { return strings.Contains(aLog.String(), waiting) })
	for i := 0; i < 3; i++ {
		a.maybeBootstrap()
	}
	if n := strings.Count(aLog.String(), "waiting for more servers"); n != 1 {
		t.Fatalf("the reason to wait was logged %d times, want once:\n%s", n, aLog.String())
	}
	if a.raft.State() == raft.Leader || len(raftServers(a)) != 0 {
		t.Fatal("a server expecting 3 bootstrapped alone")
	}

	b := gossipServerIn(t, "b", t.TempDir(), 2, DefaultConfig().Region, withLog(&bLog))
	if _, err := b.Join([]string{serfAddr(a)}); err != nil {
		t.Fatal(err)
	}
	const disagree = "servers disagree on bootstrap_expect: not bootstrapping until every server has the same value: member=a.global their_expect=3 ours=2"
	waitFor(t, 10*time.Second, "the disagreement logged", func() bool { return strings.Contains(bLog.String(), disagree) })
	for i := 0; i < 3; i++ {
		b.maybeBootstrap()
	}
	if n := strings.Count(bLog.String(), "servers disagree on bootstrap_expect"); n != 1 {
		t.Fatalf("the disagreement was logged %d times, want once:\n%s", n, bLog.String())
	}
	if len(raftServers(a)) != 0 || len(raftServers(b)) != 0 {
		t.Fatal("servers that disagree on bootstrap_expect bootstrapped")
	}
}

// A server joining a running cluster is added without a vote and promoted
// to voter by autopilot once it has been healthy for
// server_stabilization_time, as Nomad's autopilot does. Before, it voted as
// soon as it joined: a server still catching up counted toward the quorum.
func TestJoiningServerVotesOnlyOnceStable(t *testing.T) {
	stab := func(c *Config) {
		ap := structs.DefaultAutopilotConfig()
		ap.ServerStabilizationTime = 3 * time.Second
		c.AutopilotConfig = ap
		c.AutopilotInterval = 200 * time.Millisecond
	}
	s1 := gossipServerIn(t, "v1", t.TempDir(), 1, DefaultConfig().Region, stab)
	waitFor(t, 20*time.Second, "the first server leads", func() bool { return s1.IsLeader() })
	s2 := gossipServerIn(t, "v2", t.TempDir(), 0, DefaultConfig().Region, stab)
	if _, err := s2.Join([]string{serfAddr(s1)}); err != nil {
		t.Fatal(err)
	}
	suffrage := func() (raft.ServerSuffrage, bool) {
		for _, srv := range raftServers(s1) {
			if string(srv.ID) == s2.config.NodeID {
				return srv.Suffrage, true
			}
		}
		return 0, false
	}
	waitFor(t, 20*time.Second, "the new server in the Raft configuration", func() bool { _, ok := suffrage(); return ok })
	if sf, _ := suffrage(); sf != raft.Nonvoter {
		t.Fatalf("the joining server was added as %v: want a non-voter until it is stable", sf)
	}
	waitFor(t, 30*time.Second, "autopilot promotes the stable server", func() bool { sf, _ := suffrage(); return sf == raft.Voter })
}
