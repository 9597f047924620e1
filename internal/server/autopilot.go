package server

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"
	"github.com/hashicorp/serf/serf"

	"github.com/drover-project/drover/internal/structs"
)

// Autopilot (hashicorp/raft-autopilot) runs on the leader while it leads:
// it tracks every server's health from its Raft progress, promotes new
// servers once stable, and removes dead ones (CleanupDeadServers) without
// ever taking the voters below a majority or MinQuorum. Its configuration
// is stored through Raft (AutopilotConfigRequestType); the first leader
// stores the agent's `autopilot` block when none is.
//
// Autopilot needs gossip to know which servers exist: a server without it
// (in-process tests) runs none.

// autopilotDelegate is autopilot's view of this server.
type autopilotDelegate struct{ s *Server }

func (s *Server) setupAutopilot() {
	if s.gossip == nil {
		return
	}
	s.autopilot = autopilot.New(s.raft, &autopilotDelegate{s},
		autopilot.WithLogger(s.logger.Named("autopilot")),
		autopilot.WithPromoter(&promoter{}),
		autopilot.WithReconcileInterval(s.config.AutopilotInterval),
		autopilot.WithUpdateInterval(s.config.AutopilotInterval/5))
}

// startAutopilot starts autopilot for the leadership stopCh belongs to;
// revokeLeadership stops it (stopAutopilot). The two are serialised so that
// a start that loses the race with the end of its leadership never runs.
func (s *Server) startAutopilot(stopCh chan struct{}) {
	if s.autopilot == nil {
		return
	}
	s.ensureAutopilotConfig()
	s.autopilotMu.Lock()
	defer s.autopilotMu.Unlock()
	select {
	case <-stopCh:
		return
	default:
	}
	s.autopilot.Start(context.Background())
}

// stopAutopilot stops autopilot without waiting for it (its Raft calls
// fail fast once leadership is gone).
func (s *Server) stopAutopilot() {
	if s.autopilot == nil {
		return
	}
	s.autopilotMu.Lock()
	defer s.autopilotMu.Unlock()
	s.autopilot.Stop()
}

// ensureAutopilotConfig stores the configured autopilot configuration when
// the cluster has none (a CAS write: never over one an operator set).
func (s *Server) ensureAutopilotConfig() {
	if c, err := s.State().AutopilotConfig(nil); err != nil || c != nil {
		return
	}
	cfg := s.bootstrapAutopilotConfig()
	cfg.ModifyIndex = 0
	if _, _, err := s.raftApply(structs.AutopilotConfigRequestType, &structs.AutopilotSetConfigRequest{Config: *cfg, CAS: true}); err != nil {
		s.logger.Warn("storing the autopilot configuration failed", "error", err)
	}
}

// bootstrapAutopilotConfig is the agent's `autopilot` block (or Nomad's
// defaults).
func (s *Server) bootstrapAutopilotConfig() *structs.AutopilotConfig {
	if s.config.AutopilotConfig != nil {
		c := *s.config.AutopilotConfig
		return &c
	}
	return structs.DefaultAutopilotConfig()
}

// currentAutopilotConfig is the stored configuration, or the agent's when
// none is stored yet.
func (s *Server) currentAutopilotConfig() *structs.AutopilotConfig {
	if c, err := s.State().AutopilotConfig(nil); err == nil && c != nil {
		return c
	}
	return s.bootstrapAutopilotConfig()
}

func (d *autopilotDelegate) AutopilotConfig() *autopilot.Config {
	c := d.s.currentAutopilotConfig()
	return &autopilot.Config{
		CleanupDeadServers:      c.CleanupDeadServers,
		LastContactThreshold:    c.LastContactThreshold,
		MaxTrailingLogs:         c.MaxTrailingLogs,
		MinQuorum:               c.MinQuorum,
		ServerStabilizationTime: c.ServerStabilizationTime,
	}
}

func (d *autopilotDelegate) NotifyState(*autopilot.State) {}

// KnownServers are the region's servers in the gossip pool.
func (d *autopilotDelegate) KnownServers() map[raft.ServerID]*autopilot.Server {
	s := d.s
	leader, _ := s.raft.LeaderWithID()
	out := map[raft.ServerID]*autopilot.Server{}
	for _, m := range s.Members() {
		p, ok := parseServer(m)
		if !ok || p.Region != s.config.Region || p.ID == "" {
			continue
		}
		status := autopilot.NodeUnknown
		switch {
		case p.ID == s.config.NodeID:
			// The leader itself is alive, whatever its gossip says while
			// it leaves: autopilot must never remove the server it runs on.
			status = autopilot.NodeAlive
		case m.Status == serf.StatusAlive:
			status = autopilot.NodeAlive
		case m.Status == serf.StatusFailed:
			status = autopilot.NodeFailed
		case m.Status == serf.StatusLeft:
			status = autopilot.NodeLeft
		}
		nodeType := autopilot.NodeVoter
		if p.NonVoter {
			nodeType = nodeNonVoter
		}
		out[raft.ServerID(p.ID)] = &autopilot.Server{
			ID: raft.ServerID(p.ID), Name: p.Name, Address: raft.ServerAddress(p.Addr),
			NodeStatus: status, Version: p.Build, Meta: m.Tags, RaftVersion: p.RaftVersion, NodeType: nodeType,
			IsLeader: raft.ServerAddress(p.Addr) == leader,
		}
	}
	return out
}

// FetchServerStats asks every alive server for its Raft progress.
func (d *autopilotDelegate) FetchServerStats(ctx context.Context, servers map[raft.ServerID]*autopilot.Server) map[raft.ServerID]*autopilot.ServerStats {
	s := d.s
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[raft.ServerID]*autopilot.ServerStats{}
	for id, srv := range servers {
		if srv.NodeStatus != autopilot.NodeAlive {
			continue
		}
		wg.Add(1)
		go func(id raft.ServerID, addr string) {
			defer wg.Done()
			var st structs.RaftStatsResponse
			if string(id) == s.config.NodeID {
				st = s.localRaftStats()
			} else {
				done := make(chan error, 1)
				go func() {
					done <- s.pool.Call(addr, "Status.RaftStats", &structs.GenericRequest{QueryOptions: structs.QueryOptions{Region: s.config.Region, AllowStale: true, AuthToken: s.serverSecret()}}, &st)
				}()
				select {
				case err := <-done:
					if err != nil {
						s.logger.Debug("autopilot: server stats unavailable", "id", id, "error", err)
						return
					}
				case <-ctx.Done():
					return
				}
			}
			mu.Lock()
			out[id] = &autopilot.ServerStats{LastContact: st.LastContact, LastTerm: st.LastTerm, LastIndex: st.LastIndex}
			mu.Unlock()
		}(id, string(srv.Address))
	}
	wg.Wait()
	return out
}

// RemoveFailedServer force-leaves a dead server from gossip; the leader's
// reconcile then removes it from Raft.
func (d *autopilotDelegate) RemoveFailedServer(srv *autopilot.Server) {
	s := d.s
	go func() {
		s.logger.Info("autopilot: removing a dead server", "member", srv.Name, "id", srv.ID)
		if err := s.RemoveFailedNode(srv.Name, false); err != nil {
			s.logger.Warn("autopilot: force-leaving a dead server failed", "member", srv.Name, "error", err)
		}
	}()
}

// localRaftStats is this server's Raft progress.
func (s *Server) localRaftStats() structs.RaftStatsResponse {
	stats := s.raft.Stats()
	var out structs.RaftStatsResponse
	out.LastTerm, _ = strconv.ParseUint(stats["last_log_term"], 10, 64)
	out.LastIndex, _ = strconv.ParseUint(stats["last_log_index"], 10, 64)
	switch lc := stats["last_contact"]; lc {
	case "never":
		out.LastContact = -1
	case "0", "":
	default:
		if d, err := time.ParseDuration(lc); err == nil {
			out.LastContact = d
		}
	}
	return out
}

// RaftStats reports this server's Raft progress (the leader's autopilot
// asks each server).
func (s *Status) RaftStats(args *structs.GenericRequest, reply *structs.RaftStatsResponse) error {
	*reply = s.srv.localRaftStats()
	return nil
}

// autopilotHealth is the cluster's health as the leader's autopilot sees
// it.
func (s *Server) autopilotHealth() (*structs.AutopilotHealthResponse, error) {
	if s.autopilot == nil {
		return nil, structs.NewErrCoded(501, "autopilot is not running: this server runs no gossip")
	}
	st := s.autopilot.GetState()
	if st == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if st, err = s.autopilot.ComputeState(ctx); err != nil {
			return nil, err
		}
	}
	out := &structs.AutopilotHealthResponse{Healthy: st.Healthy, FailureTolerance: st.FailureTolerance, Leader: string(st.Leader)}
	for _, v := range st.Voters {
		out.Voters = append(out.Voters, string(v))
	}
	serfStatus := map[string]string{}
	for _, m := range s.Members() {
		if p, ok := parseServer(m); ok {
			serfStatus[p.ID] = m.Status.String()
		}
	}
	for id, srv := range st.Servers {
		out.Servers = append(out.Servers, structs.AutopilotServerHealth{
			ID: string(id), Name: srv.Server.Name, Address: string(srv.Server.Address),
			SerfStatus: serfStatus[string(id)], Version: srv.Server.Version,
			Leader: id == st.Leader, Voter: srv.HasVotingRights(),
			LastContact: srv.Stats.LastContact, LastTerm: srv.Stats.LastTerm, LastIndex: srv.Stats.LastIndex,
			Healthy: srv.Health.Healthy, StableSince: srv.Health.StableSince,
		})
	}
	sortServerHealth(out.Servers)
	return out, nil
}

func sortServerHealth(h []structs.AutopilotServerHealth) {
	for i := 1; i < len(h); i++ {
		for j := i; j > 0 && h[j].Name < h[j-1].Name; j-- {
			h[j], h[j-1] = h[j-1], h[j]
		}
	}
}

// nodeNonVoter is the autopilot node type of a server started with
// server.non_voting_server: it replicates but never gets a vote.
const nodeNonVoter autopilot.NodeType = "nonvoter"

// promoter is autopilot's stable promoter (healthy, stable non-voters are
// promoted) except for servers that asked not to vote.
type promoter struct{ autopilot.StablePromoter }

func (p *promoter) GetNodeTypes(c *autopilot.Config, s *autopilot.State) map[raft.ServerID]autopilot.NodeType {
	types := p.StablePromoter.GetNodeTypes(c, s)
	for id, srv := range s.Servers {
		if srv.Server.Meta["nonvoter"] == "1" {
			types[id] = nodeNonVoter
		}
	}
	return types
}

func (p *promoter) CalculatePromotionsAndDemotions(c *autopilot.Config, s *autopilot.State) autopilot.RaftChanges {
	changes := p.StablePromoter.CalculatePromotionsAndDemotions(c, s)
	var keep []raft.ServerID
	for _, id := range changes.Promotions {
		if srv := s.Servers[id]; srv == nil || srv.Server.Meta["nonvoter"] != "1" {
			keep = append(keep, id)
		}
	}
	changes.Promotions = keep
	return changes
}
