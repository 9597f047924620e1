package server

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"

	"github.com/drover-project/drover/internal/structs"
)

// triggerBootstrap runs maybeBootstrap in the background, once at a time.
func (s *Server) triggerBootstrap() {
	if s.config.BootstrapExpect <= 1 || s.bootstrapped.Load() {
		return
	}
	go func() {
		if !s.gossip.bootstrapping.TryLock() {
			return
		}
		defer s.gossip.bootstrapping.Unlock()
		s.maybeBootstrap()
	}()
}

// maybeBootstrap bootstraps Raft once bootstrap_expect servers of this
// region are in the gossip pool. It never bootstraps twice, never when this
// server has Raft state, and never when another server already has peers
// (it joined a running cluster: the leader adds it).
func (s *Server) maybeBootstrap() {
	expect := s.config.BootstrapExpect
	if expect <= 1 || s.bootstrapped.Load() || s.raft == nil {
		return
	}
	if f := s.raft.GetConfiguration(); f.Error() == nil && len(f.Configuration().Servers) > 0 {
		s.bootstrapped.Store(true)
		return
	}
	g := s.gossip
	g.mu.Lock()
	var servers []*serverParts
	for _, p := range g.peers {
		if p.Status != serf.StatusAlive {
			continue
		}
		if p.Expect != 0 && p.Expect != expect {
			g.mu.Unlock()
			s.bootstrapNote(hclog.Error, "servers disagree on bootstrap_expect: not bootstrapping until every server has the same value", "member", p.Name, "their_expect", p.Expect, "ours", expect)
			return
		}
		if p.Bootstrap {
			// Its cluster exists: its leader adds this server.
			s.logger.Debug("a server in bootstrap mode (bootstrap_expect = 1) is in the pool: waiting to be added to its cluster", "member", p.Name)
			g.mu.Unlock()
			return
		}
		servers = append(servers, p)
	}
	g.mu.Unlock()
	if len(servers) < expect {
		names := make([]string, 0, len(servers))
		for _, p := range servers {
			names = append(names, p.Name)
		}
		sort.Strings(names)
		s.bootstrapNote(hclog.Info, "bootstrap_expect: waiting for more servers to join the gossip pool before electing a leader",
			"expect", expect, "found", len(servers), "servers", strings.Join(names, ","))
		return
	}
	// A server that already has peers means the cluster exists.
	for _, p := range servers {
		if p.ID == s.config.NodeID {
			continue
		}
		var peers []string
		err := s.pool.Call(p.Addr, "Status.Peers", &structs.GenericRequest{QueryOptions: structs.QueryOptions{Region: s.config.Region, AllowStale: true}}, &peers)
		if err != nil {
			s.bootstrapNote(hclog.Warn, "bootstrap: cannot ask a server for its peers; waiting", "member", p.Name, "error", err)
			return
		}
		if len(peers) > 0 {
			s.logger.Info("bootstrap: another server already has Raft peers; not bootstrapping", "member", p.Name)
			s.bootstrapped.Store(true)
			return
		}
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].ID < servers[j].ID })
	var conf raft.Configuration
	for _, p := range servers {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
	}
	s.logger.Info("bootstrap_expect reached: bootstrapping Raft", "servers", len(conf.Servers))
	if err := s.raft.BootstrapCluster(conf).Error(); err != nil && err != raft.ErrCantBootstrap {
		s.logger.Error("bootstrapping Raft failed", "error", err)
		return
	}
	s.bootstrapped.Store(true)
}

// bootstrapNoteEvery is how often an unchanged reason for not
// bootstrapping is logged again.
const bootstrapNoteEvery = time.Minute

// bootstrapNote logs why this server does not bootstrap yet: when the
// reason changes, and again every bootstrapNoteEvery while it lasts. An
// operator reading the log of a server that has no leader learns why (it
// waits for servers, or they disagree) without the retry, every 2 s,
// filling the log.
func (s *Server) bootstrapNote(level hclog.Level, msg string, args ...any) {
	key := fmt.Sprint(level, msg, args)
	g := s.gossip
	g.noteMu.Lock()
	if key == g.note && time.Since(g.noteAt) < bootstrapNoteEvery {
		g.noteMu.Unlock()
		return
	}
	g.note, g.noteAt = key, time.Now()
	g.noteMu.Unlock()
	s.logger.Log(level, msg, args...)
}

func raftID(id string) raft.ServerID { return raft.ServerID(id) }

// voterCount is how many voters the current Raft configuration has.
func (s *Server) voterCount() int {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return 0
	}
	n := 0
	for _, srv := range f.Configuration().Servers {
		if srv.Suffrage == raft.Voter {
			n++
		}
	}
	return n
}

// inRaftConfig reports whether this server is in the Raft configuration.
func (s *Server) inRaftConfig() bool {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, srv := range f.Configuration().Servers {
		if srv.ID == raftID(s.config.NodeID) {
			return true
		}
	}
	return false
}

// sleepOrShutdown waits d unless the server shuts down first.
func (s *Server) sleepOrShutdown(d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-s.shutdownCh:
		return false
	}
}
