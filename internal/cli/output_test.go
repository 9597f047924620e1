package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

func outputFixtures() *fake {
	evals := []*api.Evaluation{
		{ID: evalID, Priority: 50, TriggeredBy: "job-register", JobID: "example", Namespace: "default",
			Status: "complete", Type: "service", CreateIndex: 9},
		{ID: "1a2b3c4d-0000-4000-8000-000000000010", Priority: 50, TriggeredBy: "node-update", JobID: "example",
			Namespace: "default", NodeID: nodeID, Status: "complete", Type: "service", CreateIndex: 12},
	}
	alloc := &api.Allocation{ID: allocID, EvalID: evalID, Name: "example.cache[0]", NodeID: nodeID, NodeName: "node1",
		JobID: "example", TaskGroup: "cache", ClientStatus: "running", DesiredStatus: "run",
		CreateTime: t0.Add(-5 * time.Minute).UnixNano()}
	return &fake{routes: map[string]any{
		"GET /v1/evaluations":           evals,
		"GET /v1/allocations":           []*api.AllocationListStub{{ID: allocID}},
		"GET /v1/allocation/" + allocID: alloc,
		"GET /v1/jobs":                  []*api.JobListStub{{ID: "example", Namespace: "default"}},
		"GET /v1/job/example":           sampleJob(),
		"GET /v1/job/example/summary": &api.JobSummary{JobID: "example", Namespace: "default",
			Summary: map[string]api.TaskGroupSummary{"cache": {Running: 1}}},
		"GET /v1/job/example/allocations": []*api.AllocationListStub{{ID: allocID, NodeID: nodeID, TaskGroup: "cache",
			DesiredStatus: "run", ClientStatus: "running"}},
		"GET /v1/nodes": []*api.NodeListStub{{ID: nodeID, Name: "node1", Datacenter: "dc1", Status: "ready"}},
		"GET /v1/agent/members": &api.ServerMembers{Members: []*api.AgentMember{{Name: "s1.global", Addr: "10.0.0.1",
			Port: 4648, Status: "alive", Tags: map[string]string{"region": "global"}}}},
	}}
}

// TestOutputFormats: -json prints the api objects, -t runs a Go template over
// the same objects, for a list command and a single-object command.
func TestOutputFormats(t *testing.T) {
	cases := []struct {
		golden string
		args   []string
	}{
		{"eval_list.json", []string{"eval", "list", "-json"}},
		{"eval_list_tmpl.txt", []string{"eval", "list", "-t", `{{range .}}{{.ID}} {{.TriggeredBy}} {{.Status}}{{"\n"}}{{end}}`}},
		{"alloc_status.json", []string{"alloc", "status", "-json", "8ba8"}},
		{"alloc_status_tmpl.txt", []string{"alloc", "status", "-t", `{{.Name}} on {{.NodeName}} is {{.ClientStatus}}`, "8ba8"}},
		{"job_status.json", []string{"job", "status", "-json", "example"}},
		{"job_status_list_tmpl.txt", []string{"job", "status", "-t", `{{range .}}{{.Job.ID}} running={{(index .Summary.Summary "cache").Running}} allocs={{len .Allocations}}{{"\n"}}{{end}}`}},
		{"node_status_list_tmpl.txt", []string{"node", "status", "-t", `{{range .}}{{.Name}}={{.Status}}{{end}}`}},
		{"server_members.json", []string{"server", "members", "-json"}},
	}
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			out, errb, code := run(t, outputFixtures().server(t), tc.args...)
			if code != 0 {
				t.Fatalf("code %d: %s", code, errb)
			}
			golden(t, tc.golden, out)
		})
	}
}

func TestOutputFormatErrors(t *testing.T) {
	for _, args := range [][]string{
		{"eval", "list", "-json", "-t", "{{.}}"},
		{"alloc", "status", "-json", "-t", "{{.}}", "8ba8"},
		{"job", "status", "-json", "-t", "{{.}}"},
		{"node", "status", "-json", "-t", "{{.}}"},
		{"job", "inspect", "-json", "-t", "{{.}}", "example"},
	} {
		f := outputFixtures()
		_, errb, code := run(t, f.server(t), args...)
		if code != 1 || !strings.Contains(errb, "Both json and template formatting are not allowed") {
			t.Errorf("%v: code %d err %q", args, code, errb)
		}
		if len(f.seen) != 0 {
			t.Errorf("%v: queried the agent before refusing the flags: %v", args, f.seen)
		}
	}
	_, errb, code := run(t, outputFixtures().server(t), "eval", "list", "-t", "{{.Nope")
	if code != 1 || !strings.Contains(errb, "Error parsing template") {
		t.Errorf("bad template: code %d err %q", code, errb)
	}
	_, errb, code = run(t, outputFixtures().server(t), "alloc", "status", "-t", "{{.NoSuchField}}", "8ba8")
	if code != 1 || !strings.Contains(errb, "Error executing template") || !strings.Contains(errb, "NoSuchField") {
		t.Errorf("template on a missing field: code %d err %q", code, errb)
	}
	// server members takes -json only, as Nomad's.
	if _, _, code = run(t, outputFixtures().server(t), "server", "members", "-t", "{{.}}"); code != 1 {
		t.Errorf("server members -t must be refused, got code %d", code)
	}
}

func TestJobInspectJSONIsTheBareJob(t *testing.T) {
	out, errb, code := run(t, outputFixtures().server(t), "job", "inspect", "-t", "{{.ID}} v{{.Version}}", "example")
	if code != 0 || out != "example v0\n" {
		t.Fatalf("code %d out %q err %q", code, out, errb)
	}
	out, _, _ = run(t, outputFixtures().server(t), "job", "inspect", "-json", "example")
	var job api.Job
	if err := json.Unmarshal([]byte(out), &job); err != nil || deref(job.ID) != "example" || strings.Contains(out, `"Job": {`) {
		t.Fatalf("inspect -json should print the job itself (%v):\n%.200s", err, out)
	}
}
