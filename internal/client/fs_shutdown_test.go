package client

import (
	"context"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/nomad/api"
)

// A followed log whose agent stops (its tasks keep running: not dev mode)
// ends with an error, never as a finished log: `alloc logs -f` took the
// clean end for "the task is done" and stopped following across the
// restart.
func TestClient_FSLogsFollowEndsWithErrorOnShutdown(t *testing.T) {
	tc := newTestClient(t, func(c *Config) { c.DevMode = false })
	tc.waitReady(t)
	a := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"stdout_string": "hello\n", "run_for": "-1s"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)

	c := collect(func(out chan<- *api.StreamFrame) error {
		return tc.FSLogs(context.Background(), a.ID, "t", "stdout", "start", 0, true, out)
	})
	c.waitText(t, "hello\n")
	if err := tc.Shutdown(); err != nil {
		t.Fatal(err)
	}
	err := c.waitDone(t)
	wantCode(t, err, 503)
	if !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("error %q does not say the agent is shutting down", err)
	}
}
