package client

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/allocrunner"
	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/rawexec"
	"github.com/drover-project/drover/internal/structs"
)

// placeDeployed places a service allocation of deployment depID whose
// group judges task states with the given min_healthy_time.
func (tc *testClient) placeDeployed(depID string, minHealthy time.Duration, canary bool, tasks ...*structs.Task) *structs.Allocation {
	a := testutil.Alloc(structs.JobTypeService, tasks...)
	a.NodeID = tc.NodeID()
	a.DeploymentID = depID
	mode, deadline := "task_states", time.Minute
	a.Job.TaskGroups[0].Update = &structs.UpdateStrategy{HealthCheck: &mode, MinHealthyTime: &minHealthy, HealthyDeadline: &deadline}
	if canary {
		a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	}
	tc.srv.upsertAlloc(a)
	return a
}

// waitServerHealth waits until the servers hold health for id newer than
// after.
func (tc *testClient) waitServerHealth(t *testing.T, id string, after time.Time) *structs.Allocation {
	t.Helper()
	var a *structs.Allocation
	testutil.WaitFor(t, 10*time.Second, func() error {
		a = tc.srv.alloc(id)
		if a == nil || a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil || !a.DeploymentStatus.Timestamp.After(after) {
			return fmt.Errorf("server copy has no new health: %+v", a)
		}
		return nil
	})
	return a
}

// inPlaceUpdate has the servers send a new version of the allocation's job
// (same alloc ID, newer AllocModifyIndex), in deployment depID with its
// health cleared.
func (tc *testClient) inPlaceUpdate(t *testing.T, id, depID string) *structs.Allocation {
	t.Helper()
	tc.srv.mu.Lock()
	a := tc.srv.allocs[id].CopySkipJob()
	tc.srv.mu.Unlock()
	a.Job = a.Job.Copy()
	a.Job.Version++
	a.Job.TaskGroups[0].Count = 3
	a.DeploymentID = depID
	a.DeploymentStatus = nil
	tc.srv.upsertAlloc(a)
	testutil.WaitFor(t, 10*time.Second, func() error {
		ar, err := tc.getAllocRunner(id)
		if err != nil {
			return err
		}
		if v := ar.Alloc().Job.Version; v != a.Job.Version {
			return fmt.Errorf("client runs job version %d, want %d", v, a.Job.Version)
		}
		return nil
	})
	return tc.srv.alloc(id)
}

// The health the client decides reaches the servers with its alloc update,
// as the servers' copy's health (the canary flag stays theirs); an in-place
// update into a new deployment keeps the task running and has its health
// reported again for that deployment.
func TestClient_DeploymentHealthReportedWithAllocUpdate(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	a := tc.placeDeployed("d1", 200*time.Millisecond, true, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	got := tc.waitServerHealth(t, a.ID, time.Time{})
	ds := got.DeploymentStatus
	if !*ds.Healthy || !ds.Canary {
		t.Fatalf("server health %+v, want healthy canary", ds)
	}
	if ran := ds.Timestamp.Sub(got.TaskStates["t"].StartedAt); ran < 200*time.Millisecond {
		t.Fatalf("healthy after %s, less than min_healthy_time", ran)
	}
	tc.srv.mu.Lock()
	var carried bool
	for _, b := range tc.srv.updates {
		for _, u := range b {
			if u.ID == a.ID && u.DeploymentStatus != nil && u.ClientStatus == structs.AllocClientStatusRunning {
				carried = true
			}
		}
	}
	tc.srv.mu.Unlock()
	if !carried {
		t.Fatal("no Node.UpdateAlloc carried the health")
	}

	tc.inPlaceUpdate(t, a.ID, "d2")
	again := tc.waitServerHealth(t, a.ID, ds.Timestamp)
	if !*again.DeploymentStatus.Healthy || again.DeploymentStatus.Canary {
		t.Fatalf("second deployment's health %+v, want healthy and no canary", again.DeploymentStatus)
	}
	if n := tc.drv.StartCount("t"); n != 1 {
		t.Fatalf("task started %d times across the in-place update", n)
	}
	if !again.TaskStates["t"].StartedAt.Equal(got.TaskStates["t"].StartedAt) {
		t.Fatal("the task started again")
	}
}

// An in-place update (same alloc ID, new job version) leaves the task's
// process alone: same PIDs, same events; a stop afterwards still stops it.
func TestClient_InPlaceUpdateKeepsPIDs(t *testing.T) {
	drv := rawexec.New(rawexec.Config{Enabled: true})
	if fp := drv.Fingerprint(); fp.Health != drivers.HealthHealthy {
		if os.Getenv("CI") != "" {
			t.Fatalf("raw_exec unhealthy in CI: %s", fp.HealthDescription)
		}
		t.Skipf("raw_exec not healthy here: %s", fp.HealthDescription)
	}
	tc := newTestClient(t, func(c *Config) { c.Drivers = []drivers.Driver{drv} })
	tc.waitReady(t)
	task := &structs.Task{Name: "sleep", Driver: "raw_exec", KillTimeout: time.Second, Config: map[string]any{
		"command": "/bin/sh", "args": []any{"-c", "sleep 600"},
	}}
	a := tc.place(structs.JobTypeService, task)
	before := tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	pids := func() []int {
		st, err := drv.InspectTask(a.ID + "/sleep")
		if err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(slices.Values(st.PIDs))
	}
	var pidsBefore []int
	testutil.WaitFor(t, 10*time.Second, func() error {
		if pidsBefore = pids(); len(pidsBefore) == 0 {
			return fmt.Errorf("pids %v: sleep not started yet", pidsBefore)
		}
		return nil
	})

	after := tc.inPlaceUpdate(t, a.ID, "")
	if got := pids(); !slices.Equal(got, pidsBefore) {
		t.Fatalf("PIDs %v after the in-place update, %v before", got, pidsBefore)
	}
	ev := func(a *structs.Allocation) string {
		var out []string
		for _, e := range a.TaskStates["sleep"].Events {
			out = append(out, fmt.Sprintf("%s@%d", e.Type, e.Time))
		}
		return fmt.Sprint(out)
	}
	if ar, _ := tc.getAllocRunner(a.ID); ev(ar.Alloc()) != ev(before) {
		t.Fatalf("events %s after the update, %s before", ev(ar.Alloc()), ev(before))
	}
	if after.ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("status %s after the update", after.ClientStatus)
	}

	tc.srv.stopAlloc(a.ID)
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusComplete)
}

// Health the client just decided goes out in the next 200 ms batch, not
// the 1 s one: the deployment waits on it. Repeating it is not urgent.
func TestAllocSync_NewHealthIsUrgent(t *testing.T) {
	c := &Client{allocs: map[string]*allocrunner.AllocRunner{"a": nil}}
	s := newAllocSync(c)
	running := &structs.Allocation{ID: "a", ClientStatus: structs.AllocClientStatusRunning}
	s.acked["a"] = running
	s.allocStateUpdated(&structs.Allocation{ID: "a", ClientStatus: structs.AllocClientStatusRunning,
		TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning}}})
	if s.urgent {
		t.Fatal("a task-state change alone made the batch urgent")
	}
	healthy := true
	withHealth := &structs.Allocation{ID: "a", ClientStatus: structs.AllocClientStatusRunning,
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: time.Now()}}
	s.allocStateUpdated(withHealth)
	if !s.urgent {
		t.Fatal("new health did not make the batch urgent")
	}
	s.urgent = false
	s.pending = map[string]*structs.Allocation{}
	s.acked["a"] = withHealth
	again := *withHealth
	again.TaskStates = map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning, Restarts: 1}}
	s.allocStateUpdated(&again)
	if s.urgent {
		t.Fatal("repeated health made the batch urgent")
	}
}
