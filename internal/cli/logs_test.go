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

// -job takes the argument as a job ID and reads one of its running
// allocations (Nomad's alloc logs, fs and exec have it); a job with none
// running says so.
func TestAllocLogsByJob(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/job/web/allocations": []*api.AllocationListStub{
			{ID: "dead0000-0000-0000-0000-000000000000", ClientStatus: "complete"},
			{ID: allocID, ClientStatus: "running"},
		},
		"GET /v1/job/idle/allocations": []*api.AllocationListStub{{ID: allocID, ClientStatus: "failed"}},
		"GET /v1/allocation/" + allocID: &api.Allocation{ID: allocID, TaskGroup: "g",
			TaskStates: map[string]*api.TaskState{"t": {State: "running"}}},
		"GET /v1/client/fs/logs/" + allocID: &api.StreamFrame{Data: []byte("hello\n"), File: "alloc/logs/t.stdout.0"},
	}}
	srv := f.server(t)
	out, errb, code := run(t, srv, "alloc", "logs", "-job", "web", "t")
	if code != 0 || out != "hello\n" {
		t.Fatalf("code %d out %q err %q seen %v", code, out, errb, f.seen)
	}
	_, errb, code = run(t, srv, "alloc", "logs", "-job", "idle", "t")
	if code != 1 || errb != "Job \"idle\" has no running allocations\n" {
		t.Fatalf("a job without running allocations: code %d err %q", code, errb)
	}
}
