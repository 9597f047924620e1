package httpapi

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

type fakeOps struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeOps) AllocRestart(allocID, task string, all bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if allocID != "a1" {
		return structs.NewErrCoded(404, "Unknown allocation %q", allocID)
	}
	f.calls = append(f.calls, "restart "+task+" "+map[bool]string{true: "all", false: "running"}[all])
	return nil
}

func (f *fakeOps) AllocSignal(allocID, task, sig string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if allocID != "a1" {
		return structs.NewErrCoded(404, "Unknown allocation %q", allocID)
	}
	f.calls = append(f.calls, "signal "+task+" "+sig)
	return nil
}

// The official client's Restart, RestartAllTasks, Signal and Checks reach
// the local client; bad input is a 400 and an unknown allocation a 404.
func TestAllocOpsRoutes(t *testing.T) {
	ops := &fakeOps{}
	env := newEnv(t, func(c *Config) {
		c.AllocOps = ops
		c.Allocs = allocSet{"a1": true}
		c.AllocChecks = allocSet{"a1": true}
	})
	a := &api.Allocation{ID: "a1"}
	if err := env.client.Allocations().Restart(a, "web", nil); err != nil {
		t.Fatal(err)
	}
	if err := env.client.Allocations().RestartAllTasks(a, nil); err != nil {
		t.Fatal(err)
	}
	if err := env.client.Allocations().Signal(a, nil, "web", "SIGUSR1"); err != nil {
		t.Fatal(err)
	}
	checks, err := env.client.Allocations().Checks("a1", nil)
	if err != nil || checks == nil || len(checks) != 0 {
		t.Fatalf("checks: %v %v", checks, err)
	}
	if code, _, body := env.raw(t, "GET", "/v1/allocation/a1/checks", ""); code != 200 || strings.TrimSpace(body) != "{}" {
		t.Fatalf("server-side checks route: %d %q", code, body)
	}
	if got := strings.Join(ops.calls, "|"); got != "restart web running|restart  all|signal web SIGUSR1" {
		t.Fatalf("calls %q", got)
	}
	env.rpc.reply("Alloc.GetAlloc", structs.SingleAllocResponse{})
	for _, tc := range []struct {
		method, path, body string
		code               int
		msg                string
	}{
		{"PUT", "/v1/client/allocation/a1/restart", `{"TaskName":`, 400, "Failed to decode request body"},
		{"PUT", "/v1/client/allocation/a1/signal", `[1]`, 400, "Failed to decode request body"},
		{"GET", "/v1/client/allocation/a1/restart", "", 405, "Invalid method"},
		{"DELETE", "/v1/client/allocation/a1/signal", "", 405, "Invalid method"},
		{"PUT", "/v1/client/allocation/zz/signal", `{}`, 404, `Unknown allocation "zz"`},
		{"GET", "/v1/client/allocation/zz/checks", "", 404, `Unknown allocation "zz"`},
	} {
		code, _, body := env.raw(t, tc.method, tc.path, tc.body)
		if code != tc.code || !strings.Contains(body, tc.msg) {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, code, body, tc.code, tc.msg)
		}
	}
	if code, _, _ := env.raw(t, http.MethodPost, "/v1/client/allocation/a1/restart", ""); code != 200 {
		t.Errorf("POST without a body: %d", code)
	}
}
