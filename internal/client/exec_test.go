package client

import (
	"context"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

// A command for a task whose driver cannot exec, an unknown task or an
// unknown allocation is refused with a status that says why.
func TestClient_ExecRefusals(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	a := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "60s"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	for _, c := range []struct {
		alloc, task string
		code        int
		msg         string
	}{
		{a.ID, "t", 400, `task "t" uses the mock_driver driver, which cannot run commands`},
		{a.ID, "nope", 404, `task "nope" not found`},
		{"missing", "t", 404, `Unknown allocation "missing"`},
	} {
		_, err := tc.AllocExec(context.Background(), c.alloc, c.task, drivers.ExecOptions{Command: []string{"sh"}})
		code, _ := structs.ErrorCode(err)
		if code != c.code || err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s/%s: %d %v, want %d %q", c.alloc, c.task, code, err, c.code, c.msg)
		}
	}
}

// Stats leave out tasks whose driver cannot report them (rather than
// report them as idle); an unknown allocation is a 404.
func TestClient_AllocStatsOnlyFromDriversThatReport(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	a := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "60s"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	u, err := tc.AllocStats(a.ID)
	if err != nil || len(u.Tasks) != 0 || u.Timestamp == 0 {
		t.Fatalf("stats of a mock_driver alloc: %+v %v", u, err)
	}
	if _, err := tc.AllocStats("missing"); err == nil || !strings.Contains(err.Error(), `Unknown allocation "missing"`) {
		t.Fatalf("unknown alloc: %v", err)
	}
}
