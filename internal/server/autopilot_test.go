package server

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
	autopilot "github.com/hashicorp/raft-autopilot"
)

// A healthy, stable non-voter is promoted unless it was started with
// server.non_voting_server.
func TestPromoterKeepsNonVotingServers(t *testing.T) {
	stable := autopilot.ServerHealth{Healthy: true, StableSince: time.Now().Add(-time.Hour)}
	st := &autopilot.State{Servers: map[raft.ServerID]*autopilot.ServerState{
		"new":      {Server: autopilot.Server{ID: "new", Meta: map[string]string{}}, State: autopilot.RaftNonVoter, Health: stable},
		"nonvoter": {Server: autopilot.Server{ID: "nonvoter", Meta: map[string]string{"nonvoter": "1"}}, State: autopilot.RaftNonVoter, Health: stable},
	}}
	p := &promoter{}
	changes := p.CalculatePromotionsAndDemotions(&autopilot.Config{}, st)
	if len(changes.Promotions) != 1 || changes.Promotions[0] != "new" {
		t.Fatalf("promotions %v, want only the server that may vote", changes.Promotions)
	}
	types := p.GetNodeTypes(&autopilot.Config{}, st)
	if types["nonvoter"] != nodeNonVoter || types["new"] != autopilot.NodeVoter || p.IsPotentialVoter(types["nonvoter"]) {
		t.Fatalf("node types %v", types)
	}
}
