package server

import (
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"
)

// serfReconcileInterval is how often the leader compares the whole gossip
// pool with the Raft configuration (member events are handled at once).
const serfReconcileInterval = 10 * time.Second

// serfReconcileLoop runs while this server leads: it adds alive servers of
// the region to Raft, removes those that left gracefully and those serf
// reaps (or that are force-left with -prune). Failed servers stay voters
// until autopilot's dead-server cleanup removes them (autopilot.go).
func (s *Server) serfReconcileLoop(stopCh chan struct{}) {
	if s.gossip == nil {
		return
	}
	s.reconcileAll()
	tick := time.NewTicker(serfReconcileInterval)
	defer tick.Stop()
	for {
		select {
		case <-stopCh:
			return
		case <-tick.C:
			s.reconcileAll()
		case m := <-s.gossip.reconcileCh:
			if m.Status == statusReap {
				if parts, ok := parseServer(m); ok && parts.Region == s.config.Region && parts.ID != s.config.NodeID {
					s.removeRaftPeer(parts)
				}
				continue
			}
			s.reconcileMember(m)
		}
	}
}

func (s *Server) reconcileAll() {
	for _, m := range s.gossip.serf.Members() {
		s.reconcileMember(m)
	}
}

// reconcileMember brings one member's Raft membership in line with its
// gossip status.
func (s *Server) reconcileMember(m serf.Member) {
	parts, ok := parseServer(m)
	if !ok || parts.Region != s.config.Region || parts.ID == s.config.NodeID {
		return
	}
	switch m.Status {
	case serf.StatusAlive:
		s.addRaftPeer(m, parts)
	case serf.StatusLeft:
		s.removeRaftPeer(parts)
	}
}

// addRaftPeer adds an alive server to Raft (as a voter unless it asks not
// to vote). A second server in bootstrap mode is refused: two
// single-server clusters must not be merged.
func (s *Server) addRaftPeer(m serf.Member, parts *serverParts) {
	if parts.Bootstrap {
		for _, o := range s.gossip.serf.Members() {
			op, ok := parseServer(o)
			if ok && o.Name != m.Name && op.Bootstrap && o.Status == serf.StatusAlive {
				s.logger.Error("not adding a server in bootstrap mode to Raft: another one is in the pool (only one server may set bootstrap_expect = 1)",
					"member", m.Name)
				return
			}
		}
	}
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return
	}
	id, addr := raft.ServerID(parts.ID), raft.ServerAddress(parts.Addr)
	for _, srv := range f.Configuration().Servers {
		if srv.ID == id && srv.Address == addr {
			return // already a peer
		}
		if srv.ID == id || srv.Address == addr {
			// Same server at a new address, or a new server at an old one.
			if err := s.raft.RemoveServer(srv.ID, 0, 10*time.Second).Error(); err != nil {
				s.logger.Warn("replacing a stale Raft peer failed", "id", srv.ID, "error", err)
				return
			}
		}
	}
	// With autopilot running, a new server joins without a vote and its
	// promoter makes it a voter once it has been healthy for
	// server_stabilization_time: a server still catching up (or flapping)
	// never counts toward the quorum, as with Nomad's autopilot.
	voter := !parts.NonVoter && s.autopilot == nil
	var err error
	if voter {
		err = s.raft.AddVoter(id, addr, 0, 10*time.Second).Error()
	} else {
		err = s.raft.AddNonvoter(id, addr, 0, 10*time.Second).Error()
	}
	if err != nil {
		s.logger.Warn("adding a server to Raft failed", "member", m.Name, "error", err)
		return
	}
	s.logger.Info("added a server to Raft", "member", m.Name, "id", id, "address", addr, "voter", voter,
		"promoted_when_stable", !voter && !parts.NonVoter)
}

// removeRaftPeer removes a server that left gracefully from Raft.
func (s *Server) removeRaftPeer(parts *serverParts) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return
	}
	for _, srv := range f.Configuration().Servers {
		if string(srv.ID) == parts.ID {
			s.logger.Info("removing a server that left from Raft", "member", parts.Name, "id", srv.ID)
			if err := s.raft.RemoveServer(srv.ID, 0, 10*time.Second).Error(); err != nil {
				s.logger.Warn("removing a server that left failed", "id", srv.ID, "error", err)
			}
			return
		}
	}
}
