package client

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/structs"
	"github.com/google/uuid"
)

// A replacement of an allocation whose ephemeral disk is sticky, placed on
// the same node, waits for the previous allocation to stop and then owns
// its alloc/data and the task's local/ directory.
func TestClient_StickyDiskMovesDataOnSameNode(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	prev := testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	prev.Job.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{SizeMB: 10, Sticky: true}
	prev.NodeID = tc.NodeID()
	tc.srv.upsertAlloc(prev)
	tc.waitServerStatus(t, prev.ID, structs.AllocClientStatusRunning)

	prevDir := filepath.Join(tc.cfg.AllocDir, prev.ID)
	mustWrite(t, filepath.Join(prevDir, "alloc", "data", "db", "state.txt"), "shared data")
	mustWrite(t, filepath.Join(prevDir, "t", "local", "cache.txt"), "task data")

	// The replacement arrives while the previous allocation still runs.
	next := prev.CopySkipJob()
	next.Job = prev.Job
	next.ID, next.PreviousAllocation = uuid.NewString(), prev.ID
	next.ClientStatus, next.TaskStates = structs.AllocClientStatusPending, nil
	tc.srv.upsertAlloc(next)
	tc.srv.stopAlloc(prev.ID)
	tc.waitServerStatus(t, prev.ID, structs.AllocClientStatusComplete)
	got := tc.waitServerStatus(t, next.ID, structs.AllocClientStatusRunning)

	nextDir := filepath.Join(tc.cfg.AllocDir, next.ID)
	for rel, want := range map[string]string{
		"alloc/data/db/state.txt": "shared data",
		"t/local/cache.txt":       "task data",
	} {
		b, err := os.ReadFile(filepath.Join(nextDir, rel))
		if err != nil || string(b) != want {
			t.Fatalf("%s in the new allocation: %q, %v; want %q", rel, b, err, want)
		}
		if _, err := os.Stat(filepath.Join(prevDir, rel)); err == nil {
			t.Fatalf("%s is still in the previous allocation: it was copied, not moved", rel)
		}
	}
	var msgs []string
	for _, e := range got.TaskStates["t"].Events {
		msgs = append(msgs, e.DisplayMessage)
	}
	all := strings.Join(msgs, " | ")
	if !strings.Contains(all, "Waiting for previous allocation "+prev.ID[:8]) || !strings.Contains(all, "Migrated data from previous allocation "+prev.ID[:8]) {
		t.Fatalf("events %q do not tell of the wait and the move", all)
	}
	// The new task started only after the previous one had stopped.
	prevState := tc.srv.alloc(prev.ID).TaskStates["t"]
	if got.TaskStates["t"].StartedAt.Before(prevState.FinishedAt) {
		t.Fatalf("new task started at %v, before the previous one finished at %v", got.TaskStates["t"].StartedAt, prevState.FinishedAt)
	}
}

// Without a sticky disk the replacement starts with empty directories.
func TestClient_NonStickyReplacementStartsEmpty(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	prev := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	tc.waitServerStatus(t, prev.ID, structs.AllocClientStatusRunning)
	mustWrite(t, filepath.Join(tc.cfg.AllocDir, prev.ID, "alloc", "data", "x"), "x")
	tc.srv.stopAlloc(prev.ID)
	tc.waitServerStatus(t, prev.ID, structs.AllocClientStatusComplete)
	next := prev.CopySkipJob()
	next.Job = prev.Job
	next.ID, next.PreviousAllocation = uuid.NewString(), prev.ID
	next.ClientStatus, next.TaskStates = structs.AllocClientStatusPending, nil
	tc.srv.upsertAlloc(next)
	tc.waitServerStatus(t, next.ID, structs.AllocClientStatusRunning)
	if _, err := os.Stat(filepath.Join(tc.cfg.AllocDir, next.ID, "alloc", "data", "x")); err == nil {
		t.Fatal("a non-sticky replacement received the previous allocation's data")
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A replacement stopped while it still waits for its previous allocation
// (which keeps running) ends at once without starting its task, and the
// previous allocation keeps its data.
func TestClient_StickyDiskWaitEndsWhenStopped(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	prev := testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	prev.Job.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{SizeMB: 10, Sticky: true}
	prev.NodeID = tc.NodeID()
	tc.srv.upsertAlloc(prev)
	tc.waitServerStatus(t, prev.ID, structs.AllocClientStatusRunning)
	mustWrite(t, filepath.Join(tc.cfg.AllocDir, prev.ID, "alloc", "data", "x"), "x")

	next := prev.CopySkipJob()
	next.Job = prev.Job
	next.ID, next.PreviousAllocation = uuid.NewString(), prev.ID
	next.ClientStatus, next.TaskStates = structs.AllocClientStatusPending, nil
	tc.srv.upsertAlloc(next)
	testutil.WaitFor(t, 10*time.Second, func() error {
		a := tc.srv.alloc(next.ID)
		if a == nil || a.TaskStates["t"] == nil {
			return testutil.Errorf("no task state yet")
		}
		for _, e := range a.TaskStates["t"].Events {
			if strings.HasPrefix(e.DisplayMessage, "Waiting for previous allocation") {
				return nil
			}
		}
		return testutil.Errorf("not waiting yet: %+v", a.TaskStates["t"].Events)
	})
	tc.srv.stopAlloc(next.ID)
	got := tc.waitServerStatus(t, next.ID, structs.AllocClientStatusComplete)
	if !got.TaskStates["t"].StartedAt.IsZero() {
		t.Fatal("the stopped replacement started its task")
	}
	if a := tc.srv.alloc(prev.ID); a.ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("previous allocation %s, want still running", a.ClientStatus)
	}
	if _, err := os.Stat(filepath.Join(tc.cfg.AllocDir, prev.ID, "alloc", "data", "x")); err != nil {
		t.Fatalf("the previous allocation lost its data: %v", err)
	}
}
