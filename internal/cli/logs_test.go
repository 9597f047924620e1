package cli

import (
	"testing"

	"github.com/hashicorp/nomad/api"
)

func TestAllocLogsTail(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/allocations": []*api.AllocationListStub{{ID: allocID}},
		"GET /v1/allocation/" + allocID: &api.Allocation{ID: allocID, TaskGroup: "g",
			TaskStates: map[string]*api.TaskState{"t": {State: "running"}}},
		"GET /v1/client/fs/logs/" + allocID: &api.StreamFrame{Data: []byte("one\ntwo\nthree\n"), File: "alloc/logs/t.stdout.0"},
	}}
	out, errb, code := run(t, f.server(t), "alloc", "logs", "-tail", "-n", "2", "8ba8")
	if code != 0 || out != "two\nthree\n" {
		t.Fatalf("code %d out %q err %q seen %v", code, out, errb, f.seen)
	}
}
