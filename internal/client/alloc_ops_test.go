package client

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/taskrunner"
	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/structs"
)

func wantCoded(t *testing.T, err error, code int, msg string) {
	t.Helper()
	got, _ := structs.ErrorCode(err)
	if err == nil || got != code || !strings.Contains(err.Error(), msg) {
		t.Fatalf("want %d %q, got %d %v", code, msg, got, err)
	}
}

// alloc signal records Signaling with the signal and reaches the driver;
// alloc restart restarts in place and counts; refusals say why.
func TestClient_AllocSignalAndRestart(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	a := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "60s"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)

	if err := tc.AllocSignal(a.ID, "t", "SIGUSR1"); err != nil {
		t.Fatal(err)
	}
	var sig *structs.TaskEvent
	for _, e := range tc.allocRunner(t, a.ID).TaskState("t").Events {
		if e.Type == taskrunner.TaskSignaling {
			sig = e
		}
	}
	if sig == nil || sig.TaskSignal != "SIGUSR1" || sig.DisplayMessage != "Task being sent signal SIGUSR1: User requested signal" {
		t.Fatalf("signal event %+v", sig)
	}
	wantCoded(t, tc.AllocSignal(a.ID, "nope", "SIGUSR1"), 404, `task "nope" not found`)
	wantCoded(t, tc.AllocSignal("missing", "", "SIGUSR1"), 404, `Unknown allocation "missing"`)
	wantCoded(t, tc.AllocRestart(a.ID, "t", true), 400, "task name cannot be set")
	wantCoded(t, tc.AllocRestart(a.ID, "nope", false), 404, `task "nope" not found`)

	if err := tc.AllocRestart(a.ID, "", true); err != nil { // every task runs
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		st := tc.allocRunner(t, a.ID).TaskState("t")
		if st.Restarts != 1 || st.State != structs.TaskStateRunning {
			return testutil.Errorf("restarts %d state %s", st.Restarts, st.State)
		}
		return nil
	})

	// A finished task cannot be restarted, nor signalled.
	b := tc.place(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "1ms"}))
	tc.waitServerStatus(t, b.ID, structs.AllocClientStatusComplete)
	wantCoded(t, tc.AllocRestart(b.ID, "", false), 400, "no task of allocation")
	wantCoded(t, tc.AllocRestart(b.ID, "", true), 400, `would run task "t" again, which is not running`)
	wantCoded(t, tc.AllocRestart(b.ID, "t", false), 400, "task is not running")
	wantCoded(t, tc.AllocSignal(b.ID, "t", "SIGUSR1"), 400, "task is not running")
}

func (tc *testClient) allocRunner(t *testing.T, id string) interface {
	TaskState(string) *structs.TaskState
} {
	t.Helper()
	ar, err := tc.getAllocRunner(id)
	if err != nil {
		t.Fatal(err)
	}
	return ar
}
