package server

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// The autopilot configuration is read, written and CAS-checked through
// Raft; a bad value is a 400 naming the field.
func TestAutopilotConfigurationCAS(t *testing.T) {
	s := testServer(t, func(c *Config) {
		c.AutopilotConfig = &structs.AutopilotConfig{CleanupDeadServers: false, ServerStabilizationTime: 3 * time.Second, MaxTrailingLogs: 7}
	})
	var got structs.AutopilotConfigResponse
	if err := s.RPC("Operator.AutopilotGetConfiguration", &structs.GenericRequest{}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Config.CleanupDeadServers || got.Config.ServerStabilizationTime != 3*time.Second || got.Config.MaxTrailingLogs != 7 {
		t.Fatalf("before any write the agent's configuration is served: %+v", got.Config)
	}

	set := func(c structs.AutopilotConfig, cas bool) (bool, error) {
		var reply structs.AutopilotSetConfigResponse
		err := s.RPC("Operator.AutopilotSetConfiguration", &structs.AutopilotSetConfigRequest{Config: c, CAS: cas}, &reply)
		return reply.Updated, err
	}
	c := *got.Config
	c.MinQuorum = 3
	if ok, err := set(c, false); err != nil || !ok {
		t.Fatalf("plain write: %v %v", ok, err)
	}
	if err := s.RPC("Operator.AutopilotGetConfiguration", &structs.GenericRequest{}, &got); err != nil || got.Config.MinQuorum != 3 {
		t.Fatalf("read back: %+v %v", got.Config, err)
	}
	stale := *got.Config
	stale.ModifyIndex--
	stale.MinQuorum = 5
	if ok, err := set(stale, true); err != nil || ok {
		t.Fatalf("CAS with a stale index wrote: %v %v", ok, err)
	}
	fresh := *got.Config
	fresh.MinQuorum = 5
	if ok, err := set(fresh, true); err != nil || !ok {
		t.Fatalf("CAS with the current index: %v %v", ok, err)
	}
	bad := fresh
	bad.LastContactThreshold = -time.Second
	_, err := set(bad, false)
	if code, msg := structs.ErrorCode(err); code != 400 || msg == "" {
		t.Fatalf("negative LastContactThreshold answered %d %v", code, err)
	}
	// Without gossip there is no autopilot to ask about health.
	var h structs.AutopilotHealthResponse
	if code, _ := structs.ErrorCode(s.RPC("Operator.ServerHealth", &structs.GenericRequest{}, &h)); code != 501 {
		t.Fatalf("health without gossip answered %d", code)
	}
}
