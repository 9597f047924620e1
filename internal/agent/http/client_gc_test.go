package httpapi

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

type fakeGC struct {
	mu        sync.Mutex
	all       int
	collected []string
}

func (f *fakeGC) NodeID() string { return "node-1" }
func (f *fakeGC) CollectAll() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.all++
	return 3
}
func (f *fakeGC) CollectAlloc(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch id {
	case "running":
		return structs.NewErrCoded(400, "allocation running is not terminal: stop it first")
	case "done":
		f.collected = append(f.collected, id)
		return nil
	}
	return structs.NewErrCoded(404, "unknown allocation ID %q", id)
}

// The official client's Nodes().GC and Nodes().GcAlloc reach the local
// client; other nodes, bad paths and
// agents without a client get clear 4xx answers.
func TestClientGCRoutes(t *testing.T) {
	gc := &fakeGC{}
	env := newEnv(t, func(c *Config) { c.GC = gc })
	if err := env.client.Nodes().GC("node-1", nil); err != nil {
		t.Fatal(err)
	}
	if err := env.client.Nodes().GC("", nil); err != nil {
		t.Fatal(err)
	}
	if err := env.client.Nodes().GcAlloc("done", nil); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := env.raw(t, "PUT", "/v1/client/allocation/done/gc", ""); code != 200 {
		t.Fatalf("PUT alloc gc: %d", code)
	}
	gc.mu.Lock()
	if gc.all != 2 || len(gc.collected) != 2 {
		t.Fatalf("collect all %d times, allocs %v", gc.all, gc.collected)
	}
	gc.mu.Unlock()
	for _, c := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/v1/client/gc?node_id=node-2", 400, `node_id "node-2" is not this agent's client (node-1)`},
		{"DELETE", "/v1/client/gc", 405, "Invalid method"},
		{"PUT", "/v1/client/allocation/running/gc", 400, "is not terminal"},
		{"PUT", "/v1/client/allocation/nope/gc", 404, "unknown allocation"},
		{"PUT", "/v1/client/allocation/done/restart-me", 404, ""},
		{"PUT", "/v1/client/allocation//gc", 404, ""},
	} {
		if code, _, body := env.raw(t, c.method, c.path, ""); code != c.code || !strings.Contains(body, c.body) {
			t.Errorf("%s %s: %d %q, want %d %q", c.method, c.path, code, body, c.code, c.body)
		}
	}
	bare := newEnv(t, nil)
	for _, p := range []string{"/v1/client/gc", "/v1/client/allocation/done/gc"} {
		if code, _, body := bare.raw(t, "PUT", p, ""); code != http.StatusBadRequest || !strings.Contains(body, "does not run a Nomad client") {
			t.Errorf("no client, %s: %d %q", p, code, body)
		}
	}
}

// System endpoints call their RPCs; the eval count carries the list's
// filter and answers api.EvalCountResponse.
func TestSystemAndEvalCountRoutes(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Eval.Count", structs.EvalCountResponse{Count: 7, QueryMeta: structs.QueryMeta{Index: 42}})
	if err := env.client.System().GarbageCollect(); err != nil {
		t.Fatal(err)
	}
	env.rpc.last(t, "System.GarbageCollect")
	if err := env.client.System().ReconcileSummaries(); err != nil {
		t.Fatal(err)
	}
	env.rpc.last(t, "System.ReconcileJobSummaries")
	resp, qm, err := env.client.Evaluations().Count(&api.QueryOptions{Filter: `Status == "complete"`, Prefix: "ab"})
	if err != nil || resp.Count != 7 || qm.LastIndex != 42 {
		t.Fatalf("count %+v meta %+v err %v", resp, qm, err)
	}
	args := env.rpc.last(t, "Eval.Count").(*structs.EvalCountRequest)
	if args.Filter != `Status == "complete"` || args.Prefix != "ab" {
		t.Fatalf("count args %+v", args)
	}
	for _, c := range []struct{ method, path string }{{"GET", "/v1/system/gc"}, {"GET", "/v1/system/reconcile/summaries"}, {"PUT", "/v1/evaluations/count"}} {
		if code, _, _ := env.raw(t, c.method, c.path, ""); code != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d", c.method, c.path, code)
		}
	}
}
