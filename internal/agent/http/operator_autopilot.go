package httpapi

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// /v1/operator/autopilot/configuration: GET the autopilot configuration;
// PUT a new one (?cas=<index>: only over that version), answered true or
// false.
func (s *server) operatorAutopilotConfigRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	switch r.Method {
	case http.MethodGet:
		args := structs.GenericRequest{}
		if err := s.parseQuery(r, &args.QueryOptions); err != nil {
			return nil, err
		}
		var reply structs.AutopilotConfigResponse
		if err := s.cfg.RPC.RPC("Operator.AutopilotGetConfiguration", &args, &reply); err != nil {
			return nil, err
		}
		setMeta(w, &reply.QueryMeta)
		c := reply.Config
		if c == nil {
			c = structs.DefaultAutopilotConfig()
		}
		return &api.AutopilotConfiguration{
			CleanupDeadServers: c.CleanupDeadServers, LastContactThreshold: c.LastContactThreshold,
			MaxTrailingLogs: c.MaxTrailingLogs, MinQuorum: c.MinQuorum, ServerStabilizationTime: c.ServerStabilizationTime,
			EnableRedundancyZones: c.EnableRedundancyZones, DisableUpgradeMigration: c.DisableUpgradeMigration,
			EnableCustomUpgrades: c.EnableCustomUpgrades, CreateIndex: c.CreateIndex, ModifyIndex: c.ModifyIndex,
		}, nil
	case http.MethodPut, http.MethodPost:
		var body api.AutopilotConfiguration
		if err := decodeBody(r, &body, false); err != nil {
			return nil, err
		}
		args := structs.AutopilotSetConfigRequest{Config: structs.AutopilotConfig{
			CleanupDeadServers: body.CleanupDeadServers, LastContactThreshold: body.LastContactThreshold,
			MaxTrailingLogs: body.MaxTrailingLogs, MinQuorum: body.MinQuorum, ServerStabilizationTime: body.ServerStabilizationTime,
			EnableRedundancyZones: body.EnableRedundancyZones, DisableUpgradeMigration: body.DisableUpgradeMigration,
			EnableCustomUpgrades: body.EnableCustomUpgrades,
		}}
		if idx, ok, err := configCASParam(r); err != nil {
			return nil, err
		} else if ok {
			args.CAS, args.Config.ModifyIndex = true, idx
		}
		s.parseWrite(r, &args.WriteRequest)
		var reply structs.AutopilotSetConfigResponse
		if err := s.cfg.RPC.RPC("Operator.AutopilotSetConfiguration", &args, &reply); err != nil {
			return nil, err
		}
		setIndex(w, reply.Index)
		return reply.Updated, nil
	}
	return nil, errInvalidMethod
}

// /v1/operator/autopilot/health: every server's health as the leader's
// autopilot sees it; 429 when the cluster is not healthy (as Nomad).
func (s *server) operatorAutopilotHealthRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	args := structs.GenericRequest{}
	if err := s.parseQuery(r, &args.QueryOptions); err != nil {
		return nil, err
	}
	var reply structs.AutopilotHealthResponse
	if err := s.cfg.RPC.RPC("Operator.ServerHealth", &args, &reply); err != nil {
		return nil, err
	}
	out := &api.OperatorHealthReply{Healthy: reply.Healthy, FailureTolerance: reply.FailureTolerance,
		Leader: reply.Leader, Voters: nonNil(reply.Voters), Servers: []api.ServerHealth{}}
	for _, h := range reply.Servers {
		out.Servers = append(out.Servers, api.ServerHealth{ID: h.ID, Name: h.Name, Address: h.Address,
			SerfStatus: h.SerfStatus, Version: h.Version, Leader: h.Leader, LastContact: h.LastContact,
			LastTerm: h.LastTerm, LastIndex: h.LastIndex, Healthy: h.Healthy, Voter: h.Voter, StableSince: h.StableSince.UTC()})
	}
	if !reply.Healthy {
		return withStatus{code: http.StatusTooManyRequests, obj: out}, nil
	}
	return out, nil
}
