package httpapi

import (
	"net/http"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

var errNoAgentInfo = structs.NewErrCoded(500, "agent information is not available")

// /v1/agent/self: config, member and stats of this agent.
func (s *server) agentSelfRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	if s.cfg.Agent == nil {
		return nil, errNoAgentInfo
	}
	self := s.cfg.Agent.Self()
	if self == nil {
		self = map[string]any{}
	}
	return self, nil
}

// /v1/agent/members: the servers in this agent's gossip pool.
func (s *server) agentMembersRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	if s.cfg.Agent == nil {
		return nil, errNoAgentInfo
	}
	members, err := s.cfg.Agent.Members()
	if err != nil {
		return nil, err
	}
	if members == nil {
		members = &structs.ServerMembersResponse{}
	}
	out := *members
	out.Members = nonNil(out.Members)
	return &out, nil
}

// /v1/agent/health: {"client":{ok,message},"server":{ok,message}} for the
// roles this agent runs (narrowed by ?type=client|server); 500 if any check
// fails, 400 if a requested role is not run here.
func (s *server) agentHealthRequest(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.Method != http.MethodGet {
		return nil, errInvalidMethod
	}
	if s.cfg.Agent == nil {
		return nil, errNoAgentInfo
	}
	wantClient, wantServer := true, true
	if types, ok := r.URL.Query()["type"]; ok {
		wantClient, wantServer = false, false
		for _, t := range types {
			switch t {
			case "client":
				wantClient = true
			case "server":
				wantServer = true
			default:
				return nil, structs.NewErrCoded(400, "Invalid health type %q: must be client or server", t)
			}
		}
		if wantClient && !s.cfg.Agent.IsClient() {
			return nil, structs.NewErrCoded(400, "client not enabled on this agent")
		}
		if wantServer && !s.cfg.Agent.IsServer() {
			return nil, structs.NewErrCoded(400, "server not enabled on this agent")
		}
	}
	var out api.AgentHealthResponse
	healthy := true
	if wantClient && s.cfg.Agent.IsClient() {
		ok, msg := s.cfg.Agent.ClientHealth()
		out.Client = &api.AgentHealth{Ok: ok, Message: msg}
		healthy = healthy && ok
	}
	if wantServer && s.cfg.Agent.IsServer() {
		ok, msg := s.cfg.Agent.ServerHealth()
		out.Server = &api.AgentHealth{Ok: ok, Message: msg}
		healthy = healthy && ok
	}
	if !healthy {
		return withStatus{code: http.StatusInternalServerError, obj: &out}, nil
	}
	return &out, nil
}
