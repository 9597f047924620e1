package client

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/go-hclog"
)

func withStopOnClientAfter(a *structs.Allocation, d time.Duration) *structs.Allocation {
	a.Job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{StopOnClientAfter: &d}
	return a
}

// killedForSilence reports whether the task's events say it was stopped
// for stop_on_client_after.
func killedForSilence(st *structs.TaskState) bool {
	if st == nil {
		return false
	}
	for _, ev := range st.Events {
		if ev.Type == structs.TaskKilling && strings.Contains(ev.KillReason, "stop_on_client_after") {
			return true
		}
	}
	return false
}

// A client whose heartbeats fail for longer than a group's
// disconnect.stop_on_client_after stops that group's allocations itself,
// saying why in a task event; allocations without the setting keep
// running.
func TestClient_StopOnClientAfterStopsAllocsWhenHeartbeatsFail(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	stopped := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	// The window is 30 heartbeats long: a loaded race run can stall a
	// 50 ms heartbeat loop for a few hundred milliseconds (a 300 ms
	// window then stopped the allocation while heartbeats succeeded).
	stopped = withStopOnClientAfter(stopped, 1500*time.Millisecond)
	tc.srv.upsertAlloc(stopped)
	kept := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	tc.waitServerStatus(t, stopped.ID, structs.AllocClientStatusRunning)
	tc.waitServerStatus(t, kept.ID, structs.AllocClientStatusRunning)

	// Heartbeats keep succeeding: nothing is stopped.
	time.Sleep(2 * time.Second) // longer than the window, with heartbeats every 50 ms
	if a := tc.srv.alloc(stopped.ID); a.ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("stopped while heartbeating: %s", a.ClientStatus)
	}

	tc.srv.mu.Lock()
	tc.srv.failNext["Node.UpdateStatus"] = 1 << 30
	tc.srv.mu.Unlock()
	got := tc.waitServerStatus(t, stopped.ID, structs.AllocClientStatusComplete)
	if !killedForSilence(got.TaskStates["t"]) {
		t.Fatalf("no task event says why: %+v", got.TaskStates["t"].Events)
	}
	ar, err := tc.getAllocRunner(kept.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ar.Killed() || ar.TaskState("t").State != structs.TaskStateRunning {
		t.Fatalf("allocation without stop_on_client_after stopped: %+v", ar.TaskState("t"))
	}
}

// A client restarted after being away (no successful heartbeat) for
// longer than a group's stop_on_client_after stops the allocations it
// restores instead of running them on; its last heartbeat's time is kept in
// its state directory.
func TestClient_StopOnClientAfterCheckedOnRestore(t *testing.T) {
	dir := t.TempDir()
	srv := newFakeServer()
	drv := mock.New()
	start := func() *Client {
		c, err := New(Config{Name: "hbstop-node", DataDir: dir, RPC: srv, Version: "0.1.0", MaxKillTimeout: 2 * time.Second,
			Drivers: []drivers.Driver{drv},
			Logger:  hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}})})
		if err != nil {
			t.Fatal(err)
		}
		c.Start()
		return c
	}
	c1 := start()
	tc := &testClient{Client: c1, srv: srv}
	tc.waitReady(t)
	a := withStopOnClientAfter(testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"})), time.Minute)
	a.NodeID = c1.NodeID()
	srv.upsertAlloc(a)
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	if err := c1.Shutdown(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "client", lastHeartbeatFile))
	if err != nil {
		t.Fatalf("last heartbeat not recorded: %v", err)
	}
	if ns, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); time.Since(time.Unix(0, ns)) > time.Minute {
		t.Fatalf("recorded last heartbeat %s is stale", time.Unix(0, ns))
	}
	// The client was away for two minutes (its record says so).
	old := strconv.FormatInt(time.Now().Add(-2*time.Minute).UnixNano(), 10)
	if err := os.WriteFile(filepath.Join(dir, "client", lastHeartbeatFile), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	c2 := start()
	t.Cleanup(func() { c2.Leave(); c2.Shutdown() })
	tc.Client = c2
	got := tc.waitServerStatus(t, a.ID, structs.AllocClientStatusComplete)
	if !killedForSilence(got.TaskStates["t"]) {
		t.Fatalf("no task event says why: %+v", got.TaskStates["t"].Events)
	}
}
