package client

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/structs"
)

// DrainSelf asks the servers to drain the node with the configured spec
// (deadline defaulting to Nomad's hour, ignore_system_jobs, the node's own
// secret as token) and returns once the drain is complete and the
// allocations it moved have stopped and been reported; a system allocation
// the drain ignores keeps running.
func TestDrainSelf_DrainsThenReturns(t *testing.T) {
	tc := newTestClient(t, func(c *Config) { c.DrainOnShutdown = &DrainOnShutdown{IgnoreSystemJobs: true} })
	tc.waitReady(t)
	svc := tc.place(structs.JobTypeService, testutil.MockTask("web", map[string]any{"run_for": "-1s"}))
	sys := tc.place(structs.JobTypeSystem, testutil.MockTask("agent", map[string]any{"run_for": "-1s"}))
	tc.waitServerStatus(t, svc.ID, structs.AllocClientStatusRunning)
	tc.waitServerStatus(t, sys.ID, structs.AllocClientStatusRunning)

	done := make(chan error, 1)
	go func() { done <- tc.DrainSelf() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("DrainSelf did not return")
	}
	if a := tc.srv.alloc(svc.ID); a.ClientStatus != structs.AllocClientStatusComplete {
		t.Fatalf("the drained allocation is %s on the servers when DrainSelf returned, want complete", a.ClientStatus)
	}
	if a := tc.srv.alloc(sys.ID); a.ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("the system allocation the drain ignores is %s, want running", a.ClientStatus)
	}
	tc.srv.mu.Lock()
	drains := tc.srv.drains
	tc.srv.mu.Unlock()
	if len(drains) != 1 {
		t.Fatalf("%d drain requests, want 1", len(drains))
	}
	d := drains[0]
	if d.NodeID != tc.NodeID() || d.DrainSpec == nil || d.DrainSpec.Deadline != time.Hour || !d.DrainSpec.IgnoreSystemJobs ||
		d.AuthToken != tc.secretID() || d.Meta["message"] != "shutting down" {
		t.Fatalf("drain request %+v spec %+v", d, d.DrainSpec)
	}
}

// force = true asks for a drain that stops everything at once (a negative
// deadline, as `node drain -force`); without drain_on_shutdown nothing is
// asked.
func TestDrainSelf_ForceAndOff(t *testing.T) {
	tc := newTestClient(t, func(c *Config) { c.DrainOnShutdown = &DrainOnShutdown{Deadline: time.Minute, Force: true} })
	tc.waitReady(t)
	if err := tc.DrainSelf(); err != nil {
		t.Fatal(err)
	}
	tc.srv.mu.Lock()
	drains := tc.srv.drains
	tc.srv.mu.Unlock()
	if len(drains) != 1 || drains[0].DrainSpec.Deadline >= 0 || drains[0].DrainSpec.IgnoreSystemJobs {
		t.Fatalf("forced drain requests %+v", drains)
	}

	off := newTestClient(t, nil)
	off.waitReady(t)
	if err := off.DrainSelf(); err != nil {
		t.Fatal(err)
	}
	if len(off.srv.drains) != 0 {
		t.Fatalf("a client without drain_on_shutdown asked for a drain")
	}
}

// The agent told a second time to shut down (Hurry) while it drains
// itself: the drain is abandoned at once and the shutdown_delay the
// drained allocation waits is cut, so the shutdown that follows stops the
// task within its kill_timeout. Before, a second signal was ignored and
// the agent waited out the drain deadline and the delay (here hours).
func TestDrainSelf_HurryAbandonsDrainAndDelays(t *testing.T) {
	tc := newTestClient(t, func(c *Config) { c.DrainOnShutdown = &DrainOnShutdown{Deadline: 10 * time.Hour} })
	tc.waitReady(t)
	task := testutil.MockTask("web", map[string]any{"run_for": "-1s"})
	task.ShutdownDelay = 10 * time.Hour
	svc := tc.place(structs.JobTypeService, task)
	tc.waitServerStatus(t, svc.ID, structs.AllocClientStatusRunning)

	done := make(chan error, 1)
	go func() { done <- tc.DrainSelf() }()
	ar, err := tc.getAllocRunner(svc.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ar.SkipShutdownDelay) // a failing run does not wait 10h in Shutdown
	testutil.WaitFor(t, 10*time.Second, func() error {
		for _, e := range ar.TaskState("web").Events {
			if e.Type == structs.TaskWaitingShuttingDownDelay {
				return nil
			}
		}
		return testutil.Errorf("the drained task is not waiting its shutdown_delay yet")
	})
	tc.Hurry()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "abandoned") {
			t.Fatalf("DrainSelf after Hurry: %v, want an abandoned drain", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("DrainSelf still waits its 10h deadline after Hurry")
	}
	select {
	case <-ar.WaitCh():
	case <-time.After(10 * time.Second):
		t.Fatal("the drained task still waits its 10h shutdown_delay after Hurry")
	}
}

// A client told to shut down before its node has registered (an agent
// restarted and stopped again at once, or its servers slow to answer)
// still drains once the registration goes through, instead of skipping the
// drain because the node "never registered".
func TestDrainSelf_WaitsForRegistration(t *testing.T) {
	srv := newFakeServer()
	srv.failNext["Node.Register"] = 2
	tc := newTestClient(t, func(c *Config) {
		c.RPC = srv
		c.DrainOnShutdown = &DrainOnShutdown{Deadline: time.Minute}
	})
	tc.srv = srv
	if err := tc.DrainSelf(); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	drains := len(srv.drains)
	srv.mu.Unlock()
	if drains != 1 {
		t.Fatalf("%d drain requests, want 1", drains)
	}
}

// The drain's deadline bounds the shutdown: when it passes while a drained
// allocation still waits its shutdown_delay, the delay is cut (the task is
// then stopped with its kill signal), so the leave that follows does not
// wait hours.
func TestDrainSelf_DeadlineCutsDrainedDelays(t *testing.T) {
	old := selfDrainGrace
	selfDrainGrace = 100 * time.Millisecond
	t.Cleanup(func() { selfDrainGrace = old })
	tc := newTestClient(t, func(c *Config) {
		c.DrainOnShutdown = &DrainOnShutdown{Deadline: 300 * time.Millisecond, IgnoreSystemJobs: true}
	})
	tc.waitReady(t)
	task := testutil.MockTask("web", map[string]any{"run_for": "-1s"})
	task.ShutdownDelay = 10 * time.Hour
	svc := tc.place(structs.JobTypeService, task)
	tc.waitServerStatus(t, svc.ID, structs.AllocClientStatusRunning)
	ar, err := tc.getAllocRunner(svc.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ar.SkipShutdownDelay) // a failing run does not wait 10h in Shutdown
	err = tc.DrainSelf()
	if err == nil || !strings.Contains(err.Error(), "not complete") {
		t.Fatalf("DrainSelf: %v, want the deadline passed", err)
	}
	select {
	case <-ar.WaitCh():
	case <-time.After(10 * time.Second):
		t.Fatal("the drained task still waits its 10h shutdown_delay after the drain's deadline")
	}
}
