package server

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"

	"github.com/drover-project/drover/internal/structs"
)

// Serf gossip among the servers: how servers find each other (server_join,
// /v1/agent/join), how the leader learns which servers of its region to add
// to or remove from Raft (serf_reconcile.go), how bootstrap_expect decides
// when to bootstrap Raft (serf_bootstrap.go), and which other regions'
// servers answer for them (regions.go).

// serfState is the server's gossip: the serf instance and what it learned.
type serfState struct {
	serf    *serf.Serf
	eventCh chan serf.Event
	// encrypted is set when gossip is encrypted (server.encrypt or a
	// keyring file): only then can keys be listed, installed or removed.
	encrypted bool
	// reconcileCh hands member changes to the leader's reconcile loop; it
	// never blocks the event handler (the periodic pass catches up).
	reconcileCh chan serf.Member

	// bootstrapping is held while maybeBootstrap runs (it asks other
	// servers over RPC, which must never stall serf's event delivery).
	bootstrapping sync.Mutex
	// note is the last reason logged for not bootstrapping, at noteAt
	// (serf_bootstrap.go: bootstrapNote).
	noteMu sync.Mutex
	note   string
	noteAt time.Time

	mu sync.Mutex
	// peers are the servers of this region seen alive, by serf name.
	peers map[string]*serverParts
}

// serverParts is what a serf member's tags say about a Drover server.
type serverParts struct {
	Name        string
	ID          string
	Region      string
	Datacenter  string
	Addr        string // RPC (and Raft) address
	Bootstrap   bool
	Expect      int
	NonVoter    bool
	RaftVersion int
	Build       string
	Status      serf.MemberStatus
}

// parseServer reads a member's tags; ok is false for anything that is not
// a Drover (Nomad-tagged) server.
func parseServer(m serf.Member) (*serverParts, bool) {
	if m.Tags["role"] != "nomad" {
		return nil, false
	}
	port, err := strconv.Atoi(m.Tags["port"])
	if err != nil {
		return nil, false
	}
	host := m.Tags["rpc_addr"]
	if host == "" {
		host = m.Addr.String()
	}
	expect, _ := strconv.Atoi(m.Tags["expect"])
	raftVsn, _ := strconv.Atoi(m.Tags["raft_vsn"])
	return &serverParts{
		Name: m.Name, ID: m.Tags["id"], Region: m.Tags["region"], Datacenter: m.Tags["dc"],
		Addr:      net.JoinHostPort(host, strconv.Itoa(port)),
		Bootstrap: m.Tags["bootstrap"] == "1", Expect: expect, NonVoter: m.Tags["nonvoter"] == "1",
		RaftVersion: raftVsn, Build: m.Tags["build"], Status: m.Status,
	}, true
}

// serfTags are the member tags Nomad servers gossip.
func (s *Server) serfTags() map[string]string {
	cfg := s.config
	host, port, _ := net.SplitHostPort(s.rpcAddr)
	tags := map[string]string{
		"role":     "nomad",
		"region":   cfg.Region,
		"dc":       cfg.Datacenter,
		"rpc_addr": host,
		"port":     port,
		"id":       cfg.NodeID,
		"build":    cfg.Version,
		"vsn":      "1",
		"mvn":      "1",
		"raft_vsn": strconv.Itoa(int(s.raftProtocol)),
	}
	if cfg.DevMode || cfg.BootstrapExpect == 1 {
		tags["bootstrap"] = "1"
	}
	if cfg.BootstrapExpect > 0 {
		tags["expect"] = strconv.Itoa(cfg.BootstrapExpect)
	}
	if cfg.NonVoter {
		tags["nonvoter"] = "1"
	}
	return tags
}

// setupSerf starts gossip on the serf address. It is called after Raft is
// set up (the tags carry the Raft protocol).
func (s *Server) setupSerf() error {
	cfg := s.config
	bindHost, bindPort, err := splitHostPortInt(cfg.SerfBindAddr)
	if err != nil {
		return fmt.Errorf("server: bad serf bind address %q: %w", cfg.SerfBindAddr, err)
	}
	sc := serf.DefaultConfig()
	sc.Init()
	sc.NodeName = cfg.NodeName + "." + cfg.Region
	sc.Tags = s.serfTags()
	logger := s.logger.Named("serf").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	sc.Logger = logger
	sc.EnableNameConflictResolution = false
	// A server that left gracefully rejoins on restart only when told to.
	sc.RejoinAfterLeave = cfg.RejoinAfterLeave

	mc := memberlist.DefaultLANConfig()
	if cfg.DevMode {
		mc = memberlist.DefaultLocalConfig()
	}
	mc.Name = sc.NodeName
	mc.BindAddr, mc.BindPort = bindHost, bindPort
	mc.Logger = logger
	if cfg.SerfAdvertise != "" {
		host, port, err := splitHostPortInt(cfg.SerfAdvertise)
		if err != nil {
			return fmt.Errorf("server: bad serf advertise address %q: %w", cfg.SerfAdvertise, err)
		}
		mc.AdvertiseAddr, mc.AdvertisePort = host, port
	}
	kr, keyringFile, err := s.gossipKeyring()
	if err != nil {
		return err
	}
	if kr != nil {
		mc.Keyring = kr
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
		sc.KeyringFile = keyringFile
	}
	if cfg.SerfTuning != nil {
		cfg.SerfTuning(sc, mc)
	}
	sc.MemberlistConfig = mc

	if !cfg.DevMode && cfg.DataDir != "" {
		// The snapshot lets a restarted server rejoin the members it knew.
		dir := filepath.Join(cfg.DataDir, "serf")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("server: creating serf dir: %w", err)
		}
		sc.SnapshotPath = filepath.Join(dir, "snapshot")
	}

	st := &serfState{
		encrypted:   kr != nil,
		eventCh:     make(chan serf.Event, 256),
		reconcileCh: make(chan serf.Member, 64),
		peers:       map[string]*serverParts{},
	}
	sc.EventCh = st.eventCh
	sf, err := serf.Create(sc)
	if err != nil {
		return fmt.Errorf("server: starting gossip on %s: %w", cfg.SerfBindAddr, err)
	}
	st.serf = sf
	s.gossip = st
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.serfEventHandler()
	}()
	return nil
}

func splitHostPortInt(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("invalid port %q", p)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, port, nil
}

// serfEventHandler follows membership changes: it tracks the region's
// servers, may bootstrap Raft (bootstrap_expect), and tells the leader.
func (s *Server) serfEventHandler() {
	g := s.gossip
	// bootstrap_expect is retried while it waits (a server asked for its
	// peers may not have answered yet).
	retry := time.NewTicker(2 * time.Second)
	defer retry.Stop()
	for {
		select {
		case <-retry.C:
			s.triggerBootstrap()
		case e := <-g.eventCh:
			me, ok := e.(serf.MemberEvent)
			if !ok {
				continue
			}
			for _, m := range me.Members {
				parts, ok := parseServer(m)
				if !ok || parts.Region != s.config.Region {
					continue
				}
				g.mu.Lock()
				switch me.EventType() {
				case serf.EventMemberJoin, serf.EventMemberUpdate:
					g.peers[m.Name] = parts
				default:
					delete(g.peers, m.Name)
				}
				g.mu.Unlock()
				if me.EventType() == serf.EventMemberJoin {
					s.logger.Info("server joined the gossip pool", "member", m.Name, "addr", parts.Addr)
					s.triggerBootstrap()
				}
				if me.EventType() == serf.EventMemberReap {
					// The member is gone from serf's list: the reconcile
					// pass sees it by its absence.
					m.Status = statusReap
				}
				if s.IsLeader() {
					select {
					case g.reconcileCh <- m:
					default:
					}
				}
			}
		case <-s.shutdownCh:
			return
		}
	}
}

// statusReap marks a member serf has forgotten (reaped or force-left with
// prune).
const statusReap = serf.MemberStatus(-1)

// Members lists every member of the gossip pool (nil without gossip).
func (s *Server) Members() []serf.Member {
	if s.gossip == nil {
		return nil
	}
	return s.gossip.serf.Members()
}

// memberName is the gossip name of the server with Raft ID id ("" when
// gossip does not know it).
func (s *Server) memberName(id string) string {
	for _, m := range s.Members() {
		if p, ok := parseServer(m); ok && p.ID == id {
			return m.Name
		}
	}
	return ""
}

// LocalMember is this server's own member entry.
func (s *Server) LocalMember() (serf.Member, bool) {
	if s.gossip == nil {
		return serf.Member{}, false
	}
	return s.gossip.serf.LocalMember(), true
}

// Join contacts the gossip pool at each address (host or host:port; this
// server's serf port when missing) and returns how many were reached.
func (s *Server) Join(addrs []string) (int, error) {
	if s.gossip == nil {
		return 0, fmt.Errorf("gossip is not running on this server")
	}
	return s.gossip.serf.Join(addrs, true)
}

// RemoveFailedNode marks a failed member as left (force-leave); with prune
// it is also erased from the member list at once.
func (s *Server) RemoveFailedNode(node string, prune bool) error {
	if s.gossip == nil {
		return fmt.Errorf("gossip is not running on this server")
	}
	if prune {
		return s.gossip.serf.RemoveFailedNodePrune(node)
	}
	return s.gossip.serf.RemoveFailedNode(node)
}

// KeyManager is gossip's keyring manager (nil without gossip).
func (s *Server) KeyManager() *serf.KeyManager {
	if s.gossip == nil {
		return nil
	}
	return s.gossip.serf.KeyManager()
}

// Leave departs gracefully (leave_on_interrupt, leave_on_terminate): a
// leader hands its vote back by removing itself from Raft first, a follower
// waits (briefly) for the leader to remove it once it has left the gossip
// pool. Call Shutdown after it.
func (s *Server) Leave() {
	// Raft's own state, not IsLeader: a leader still establishing its
	// services must hand its vote back too.
	leading := func() bool { return s.raft != nil && s.raft.State() == raft.Leader }
	wasLeader := leading()
	if wasLeader {
		if n := s.voterCount(); n > 1 {
			s.logger.Info("leaving: removing this server (the leader) from Raft")
			if err := s.raft.RemoveServer(raftID(s.config.NodeID), 0, 5*time.Second).Error(); err != nil {
				s.logger.Warn("leaving: could not remove this server from Raft", "error", err)
			}
		}
	}
	if s.gossip != nil && s.otherServersAlive() {
		if err := s.gossip.serf.Leave(); err != nil {
			s.logger.Warn("leaving the gossip pool failed", "error", err)
		}
	}
	if s.raft == nil || wasLeader || leading() || s.voterCount() <= 1 {
		return
	}
	// The leader removes us when it sees us leave; wait a little for it.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if !s.inRaftConfig() {
			s.logger.Info("leaving: removed from Raft by the leader")
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.logger.Warn("leaving: the leader did not remove this server from Raft in time")
}

// otherServersAlive reports whether any other gossip member is alive
// (alone, leaving has no one to tell).
func (s *Server) otherServersAlive() bool {
	self := s.gossip.serf.LocalMember().Name
	for _, m := range s.gossip.serf.Members() {
		if m.Name != self && m.Status == serf.StatusAlive {
			return true
		}
	}
	return false
}

// shutdownSerf stops gossip without leaving (a crash or a plain stop looks
// the same to the others: the member fails).
func (s *Server) shutdownSerf() {
	if s.gossip != nil {
		s.gossip.serf.Shutdown()
	}
}

// MembersResponse is the gossip pool as /v1/agent/members shows it, this
// server first.
func (s *Server) MembersResponse() *structs.ServerMembersResponse {
	out := &structs.ServerMembersResponse{ServerName: s.config.NodeName, ServerRegion: s.config.Region, ServerDC: s.config.Datacenter}
	if s.gossip == nil {
		return out
	}
	self := s.gossip.serf.LocalMember()
	out.Members = append(out.Members, serfMemberStruct(self))
	for _, m := range s.gossip.serf.Members() {
		if m.Name != self.Name {
			out.Members = append(out.Members, serfMemberStruct(m))
		}
	}
	return out
}

func serfMemberStruct(m serf.Member) *structs.ServerMember {
	return &structs.ServerMember{Name: m.Name, Addr: m.Addr.String(), Port: m.Port, Tags: m.Tags, Status: m.Status.String(),
		ProtocolMin: m.ProtocolMin, ProtocolMax: m.ProtocolMax, ProtocolCur: m.ProtocolCur,
		DelegateMin: m.DelegateMin, DelegateMax: m.DelegateMax, DelegateCur: m.DelegateCur}
}

// Members answers a client agent's /v1/agent/members: this server's view of
// the gossip pool.
func (s *Status) Members(args *structs.GenericRequest, reply *structs.ServerMembersResponse) error {
	*reply = *s.srv.MembersResponse()
	return nil
}
