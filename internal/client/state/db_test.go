package state

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/nomad/api"
	bolt "go.etcd.io/bbolt"
)

// What a client stored survives closing and reopening the database: the
// allocation (with its reschedule tracker), the observed deployment health,
// the latest check results, each task's state and its driver handle with the restart tracker.
func TestStateSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Second)
	a := &structs.Allocation{ID: "a1", JobID: "web", TaskGroup: "g", AllocModifyIndex: 42,
		RescheduleTracker: &structs.RescheduleTracker{Events: []*structs.RescheduleEvent{{PrevAllocID: "a0", PrevNodeID: "n0"}}}}
	healthy := true
	mustOK(t, db.PutAlloc(a))
	mustOK(t, db.PutDeploymentStatus("a1", &structs.AllocDeploymentStatus{Healthy: &healthy}))
	mustOK(t, db.PutTaskState("a1", "t", &structs.TaskState{State: structs.TaskStateRunning, Restarts: 2,
		Events: []*structs.TaskEvent{{Type: structs.TaskStarted, Time: 7}}}))
	mustOK(t, db.PutTaskLocalState("a1", "t", &LocalTaskState{
		Handle: &drivers.TaskHandle{Version: 1, State: drivers.TaskStateRunning, DriverState: []byte(`{"pid":12}`),
			// EmitEvent (a func) is not persisted, and does not stop the rest.
			Config: &drivers.TaskConfig{ID: "a1/t", Config: map[string]any{"command": "/bin/sh", "args": []any{"-c", "x"}},
				EmitEvent: func(string, map[string]string) {}}},
		RestartIntervalStart: now, RestartCount: 2,
	}))
	mustOK(t, db.PutCheckResults("a1", map[string]*CheckResult{"c1": {
		Status: api.AllocCheckStatus{ID: "c1", Check: "alive", Status: "success", StatusCode: 200, Output: "ok", Timestamp: 99}, Successes: 3}}))
	// A second allocation that was deleted, then got a late task write.
	mustOK(t, db.PutAlloc(&structs.Allocation{ID: "a2"}))
	mustOK(t, db.DeleteAlloc("a2"))
	mustOK(t, db.PutTaskState("a2", "t", &structs.TaskState{State: structs.TaskStateDead}))
	mustOK(t, db.Close())

	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recs, err := db.Allocs()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("want 1 allocation back (the deleted one dropped), got %d", len(recs))
	}
	r := recs[0]
	if r.Alloc.ID != "a1" || r.Alloc.AllocModifyIndex != 42 || r.Alloc.RescheduleTracker == nil || r.Alloc.RescheduleTracker.Events[0].PrevAllocID != "a0" {
		t.Fatalf("allocation not restored: %+v", r.Alloc)
	}
	if r.DeploymentStatus == nil || r.DeploymentStatus.Healthy == nil || !*r.DeploymentStatus.Healthy {
		t.Fatalf("deployment health not restored: %+v", r.DeploymentStatus)
	}
	tr := r.Tasks["t"]
	if tr == nil || tr.State == nil || tr.State.State != structs.TaskStateRunning || tr.State.Restarts != 2 || len(tr.State.Events) != 1 {
		t.Fatalf("task state not restored: %+v", tr)
	}
	h := tr.Local.Handle
	if h == nil || string(h.DriverState) != `{"pid":12}` || h.Config.ID != "a1/t" || h.Config.Config["command"] != "/bin/sh" {
		t.Fatalf("handle not restored: %+v", h)
	}
	if !tr.Local.RestartIntervalStart.Equal(now) || tr.Local.RestartCount != 2 {
		t.Fatalf("restart tracker not restored: %+v", tr.Local)
	}
	if c := r.Checks["c1"]; c == nil || c.Status.Status != "success" || c.Status.StatusCode != 200 || c.Status.Output != "ok" ||
		c.Status.Timestamp != 99 || c.Successes != 3 {
		t.Fatalf("check results not restored: %+v", r.Checks)
	}
	if again, _ := db.Allocs(); len(again) != 1 {
		t.Fatalf("orphan records came back: %d allocations", len(again))
	}
}

// Two agents cannot share a data dir's client state: the second open fails
// with an error that says why, rather than corrupting or hanging.
func TestStateRefusesSecondOpener(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// bbolt's flock is per open file description, so a second Open in the
	// same process conflicts as another process would.
	if _, err := openWithTimeout(path, 100*time.Millisecond); err == nil {
		t.Fatal("second open of the same state.db succeeded")
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A damaged value (here an allocation's check results, then another's
// allocation record) costs only itself: Allocs still returns every other
// allocation, the first one without its check results, and a
// *DamagedError naming what was dropped. Before, one bad value made
// Allocs fail and the client forgot every allocation, so a restarted
// agent started their tasks a second time beside the running ones.
func TestStateDamagedRecordCostsOnlyItself(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, db.PutAlloc(&structs.Allocation{ID: "a1", JobID: "web"}))
	mustOK(t, db.PutTaskState("a1", "t", &structs.TaskState{State: structs.TaskStateRunning}))
	mustOK(t, db.PutCheckResults("a1", map[string]*CheckResult{"c1": {Successes: 1}}))
	mustOK(t, db.PutAlloc(&structs.Allocation{ID: "a2", JobID: "web"}))
	mustOK(t, db.PutAlloc(&structs.Allocation{ID: "a3", JobID: "web"}))
	mustOK(t, db.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(allocsBucket).Bucket([]byte("a1")).Put(checksKey, []byte{0xc1, 0xff, 0x00}); err != nil {
			return err
		}
		return tx.Bucket(allocsBucket).Bucket([]byte("a2")).Put(allocKey, []byte{0xc1})
	}))
	recs, err := db.Allocs()
	var damaged *DamagedError
	if !errors.As(err, &damaged) || len(damaged.Problems) != 2 ||
		!strings.Contains(err.Error(), "a1 check results dropped") || !strings.Contains(err.Error(), "a2 left out") {
		t.Fatalf("error %v, want a DamagedError naming a1's check results and a2", err)
	}
	got := map[string]*AllocRecord{}
	for _, r := range recs {
		got[r.Alloc.ID] = r
	}
	if len(got) != 2 || got["a1"] == nil || got["a3"] == nil {
		t.Fatalf("allocations back: %v, want a1 and a3", got)
	}
	if got["a1"].Checks != nil || got["a1"].Tasks["t"] == nil || got["a1"].Tasks["t"].State.State != structs.TaskStateRunning {
		t.Fatalf("a1 = checks %v tasks %+v, want its task state and no checks", got["a1"].Checks, got["a1"].Tasks)
	}
	mustOK(t, db.Close())
}
