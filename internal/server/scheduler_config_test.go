package server

import (
	"errors"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/server/evalbroker"
	"github.com/drover-project/drover/internal/structs"
)

func getSchedConfig(t *testing.T, s *Server) *structs.SchedulerConfiguration {
	t.Helper()
	var reply structs.SchedulerConfigurationResponse
	if err := s.RPC("Operator.SchedulerGetConfiguration", &structs.GenericRequest{}, &reply); err != nil {
		t.Fatal(err)
	}
	if reply.SchedulerConfig == nil || reply.Index == 0 {
		t.Fatalf("no configuration or index: %+v", reply)
	}
	return reply.SchedulerConfig
}

func setSchedConfig(t *testing.T, s *Server, mut func(c *structs.SchedulerConfiguration)) {
	t.Helper()
	c := *getSchedConfig(t, s)
	mut(&c)
	var reply structs.SchedulerSetConfigurationResponse
	if err := s.RPC("Operator.SchedulerSetConfiguration", &structs.SchedulerSetConfigRequest{Config: c, CAS: true}, &reply); err != nil {
		t.Fatal(err)
	}
	if !reply.Updated {
		t.Fatal("CAS write with the current index not applied")
	}
}

// The first leader stores the configuration server.default_scheduler_config
// asks for; without one, Nomad's defaults.
func TestSchedulerConfig_BootstrapAndCAS(t *testing.T) {
	s := testServer(t, nil)
	c := getSchedConfig(t, s)
	want := structs.PreemptionConfig{SystemSchedulerEnabled: true}
	if c.SchedulerAlgorithm != "binpack" || c.PreemptionConfig != want || c.MemoryOversubscriptionEnabled || c.PauseEvalBroker || c.RejectJobRegistration {
		t.Fatalf("defaults: %+v", c)
	}
	stale := *c
	stale.SchedulerAlgorithm = "spread"
	stale.ModifyIndex--
	var reply structs.SchedulerSetConfigurationResponse
	if err := s.RPC("Operator.SchedulerSetConfiguration", &structs.SchedulerSetConfigRequest{Config: stale, CAS: true}, &reply); err != nil || reply.Updated {
		t.Fatalf("stale CAS: updated=%v err=%v", reply.Updated, err)
	}
	if got := getSchedConfig(t, s); got.SchedulerAlgorithm != "binpack" {
		t.Fatalf("stale CAS wrote: %+v", got)
	}
	bad := *c
	bad.SchedulerAlgorithm = "random"
	err := s.RPC("Operator.SchedulerSetConfiguration", &structs.SchedulerSetConfigRequest{Config: bad}, &reply)
	if code, msg := structs.ErrorCode(err); code != 400 {
		t.Fatalf("bad algorithm: %d %q", code, msg)
	}

	s2 := testServer(t, func(cfg *Config) {
		cfg.SchedulerAlgorithm = "spread"
		cfg.PreemptionServiceEnabled = true
		cfg.MemoryOversubscriptionEnabled = true
	})
	if c := getSchedConfig(t, s2); c.SchedulerAlgorithm != "spread" || !c.PreemptionConfig.ServiceSchedulerEnabled || !c.MemoryOversubscriptionEnabled {
		t.Fatalf("bootstrap from the server config: %+v", c)
	}
}

// Switching the algorithm to spread through the operator API changes where
// the next job lands, with the same server and workers.
func TestSchedulerConfig_SpreadChangesPlacement(t *testing.T) {
	s := testServer(t, nil)
	a, b := testNode(t, s, 4000, 4096), testNode(t, s, 4000, 4096)
	place := func(id string) string {
		t.Helper()
		job := testJob(id, 1)
		job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 500, MemoryMB: 512}
		if ev := evalDone(t, s, register(t, s, job).EvalID); ev.Status != structs.EvalStatusComplete {
			t.Fatalf("%s eval %s: %s", id, ev.Status, ev.StatusDescription)
		}
		allocs := liveAllocs(t, s, id)
		if len(allocs) != 1 {
			t.Fatalf("%s: %d allocs", id, len(allocs))
		}
		return allocs[0].NodeID
	}
	first := place("bin1")
	if second := place("bin2"); second != first {
		t.Fatalf("binpack put the second job on %s, not with the first on %s", second, first)
	}
	setSchedConfig(t, s, func(c *structs.SchedulerConfiguration) { c.SchedulerAlgorithm = "spread" })
	other := a.ID
	if first == a.ID {
		other = b.ID
	}
	if third := place("spread1"); third != other {
		t.Fatalf("spread put the next job on %s, want the empty node %s", third, other)
	}
}

// PauseEvalBroker stops the broker handing out evaluations: a new job's
// evaluation stays pending until the broker is resumed, then runs.
func TestSchedulerConfig_PauseEvalBroker(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	setSchedConfig(t, s, func(c *structs.SchedulerConfiguration) { c.PauseEvalBroker = true })
	waitFor(t, 5*time.Second, "broker paused", func() bool { return !s.broker.Enabled() })

	resp := register(t, s, testJob("paused", 1))
	if _, _, err := s.broker.Dequeue([]string{"service"}, 10*time.Millisecond); !errors.Is(err, evalbroker.ErrDisabled) {
		t.Fatalf("paused broker handed out work: %v", err)
	}
	if ev, _ := s.State().EvalByID(nil, resp.EvalID); ev == nil || ev.Status != structs.EvalStatusPending {
		t.Fatalf("eval while paused: %+v", ev)
	}
	setSchedConfig(t, s, func(c *structs.SchedulerConfiguration) { c.PauseEvalBroker = false })
	if ev := evalDone(t, s, resp.EvalID); ev.Status != structs.EvalStatusComplete {
		t.Fatalf("eval after resume %s: %s", ev.Status, ev.StatusDescription)
	}
	if n := len(liveAllocs(t, s, "paused")); n != 1 {
		t.Fatalf("allocs after resume = %d", n)
	}
}

// RejectJobRegistration refuses register, dispatch and scale with a 403
// (no ACLs: no token is exempt), and registering works again once unset.
func TestSchedulerConfig_RejectJobRegistration(t *testing.T) {
	s := testServer(t, nil)
	setSchedConfig(t, s, func(c *structs.SchedulerConfiguration) { c.RejectJobRegistration = true })
	var resp structs.JobRegisterResponse
	err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: testJob("rejected", 1)}, &resp)
	if code, msg := structs.ErrorCode(err); code != 403 || msg == "" {
		t.Fatalf("register while rejecting: %d %q", code, msg)
	}
	err = s.RPC("Job.Dispatch", &structs.JobDispatchRequest{JobID: "p"}, &structs.JobDispatchResponse{})
	if code, _ := structs.ErrorCode(err); code != 403 {
		t.Fatalf("dispatch while rejecting: %v", err)
	}
	if j, _ := s.State().JobByID(nil, "default", "rejected"); j != nil {
		t.Fatal("rejected job stored")
	}
	setSchedConfig(t, s, func(c *structs.SchedulerConfiguration) { c.RejectJobRegistration = false })
	register(t, s, testJob("accepted", 1))
}
