package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"
)

var minimal = filepath.Join("..", "jobspec", "testdata", "minimal.hcl")

func TestJobRunMonitorsEvaluation(t *testing.T) {
	f := &fake{routes: map[string]any{
		"PUT /v1/jobs":                 &api.JobRegisterResponse{EvalID: evalID},
		"GET /v1/evaluation/" + evalID: &api.Evaluation{ID: evalID, JobID: "hello", Status: "complete"},
		"GET /v1/evaluation/" + evalID + "/allocations": []*api.AllocationListStub{
			{ID: allocID, NodeID: nodeID, TaskGroup: "g", Name: "hello.g[0]"},
		},
	}}
	out, errb, code := run(t, f.server(t), "job", "run", minimal)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "job_run.txt", out)
}

func TestJobRunPlacementFailureExits2(t *testing.T) {
	f := &fake{routes: map[string]any{
		"PUT /v1/jobs": &api.JobRegisterResponse{EvalID: evalID},
		"GET /v1/evaluation/" + evalID: &api.Evaluation{ID: evalID, JobID: "hello", Status: "complete",
			BlockedEval: "aaaabbbb-0000", FailedTGAllocs: map[string]*api.AllocationMetric{"g": {
				NodesEvaluated: 2, NodesExhausted: 2, CoalescedFailures: 1,
				DimensionExhausted: map[string]int{"memory": 2},
				ConstraintFiltered: map[string]int{"${attr.kernel.name} = windows": 1},
			}}},
		"GET /v1/evaluation/" + evalID + "/allocations": []*api.AllocationListStub{},
	}}
	out, errb, code := run(t, f.server(t), "job", "run", minimal)
	if code != 2 {
		t.Fatalf("code %d, want 2: %s", code, errb)
	}
	golden(t, "job_run_failed.txt", out)
}

func TestJobRunDetachAndOutput(t *testing.T) {
	f := &fake{routes: map[string]any{"PUT /v1/jobs": &api.JobRegisterResponse{EvalID: evalID}}}
	out, _, code := run(t, f.server(t), "job", "run", "-detach", minimal)
	if code != 0 || out != "Job registration successful\nEvaluation ID: "+evalID+"\n" {
		t.Fatalf("code %d out %q", code, out)
	}
	out, _, code = run(t, nil, "job", "run", "-output", minimal)
	if code != 0 || !strings.HasPrefix(out, "{\n    \"Job\": {") || !strings.Contains(out, `"Driver": "raw_exec"`) {
		t.Fatalf("code %d out %q", code, out)
	}
}

func TestJobRunServerErrorExits1(t *testing.T) {
	f := &fake{routes: map[string]any{}}
	_, errb, code := run(t, f.server(t), "job", "run", minimal)
	if code != 1 || !strings.Contains(errb, "Error submitting job") {
		t.Fatalf("code %d err %q", code, errb)
	}
}

func planResponse(place uint64) *api.JobPlanResponse {
	return &api.JobPlanResponse{
		JobModifyIndex: 7,
		Annotations: &api.PlanAnnotations{DesiredTGUpdates: map[string]*api.DesiredUpdates{
			"g": {Place: place, Ignore: 1 - place},
		}},
		Diff: &api.JobDiff{Type: "Edited", ID: "hello", TaskGroups: []*api.TaskGroupDiff{{
			Type: "Edited", Name: "g",
			Fields: []*api.FieldDiff{{Type: "Edited", Name: "Count", Old: "1", New: "2"}},
			Tasks: []*api.TaskDiff{{Type: "Added", Name: "t", Annotations: []string{"forces create"},
				Fields: []*api.FieldDiff{{Type: "Added", Name: "Driver", New: "raw_exec"}}}},
		}}},
	}
}

func TestJobPlan(t *testing.T) {
	f := &fake{routes: map[string]any{"PUT /v1/job/hello/plan": planResponse(1)}}
	out, errb, code := run(t, f.server(t), "job", "plan", minimal)
	if code != 1 {
		t.Fatalf("code %d, want 1 (allocations created): %s", code, errb)
	}
	golden(t, "job_plan.txt", strings.ReplaceAll(out, minimal, "hello.hcl"))

	f.routes["PUT /v1/job/hello/plan"] = planResponse(0)
	_, _, code = run(t, f.server(t), "job", "plan", minimal)
	if code != 0 {
		t.Fatalf("code %d, want 0 when nothing is created or destroyed", code)
	}
	delete(f.routes, "PUT /v1/job/hello/plan")
	_, _, code = run(t, f.server(t), "job", "plan", minimal)
	if code != 255 {
		t.Fatalf("code %d, want 255 on error", code)
	}
	_, _, code = run(t, nil, "job", "plan", "/nonexistent.hcl")
	if code != 255 {
		t.Fatalf("code %d, want 255 for an unreadable file", code)
	}
}

func TestStatusPrefixDispatchesToAlloc(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/search":      nil,
		"PUT /v1/search":      &api.SearchResponse{Matches: map[contexts.Context][]string{contexts.Allocs: {allocID}, contexts.Jobs: {}}},
		"GET /v1/allocations": []*api.AllocationListStub{{ID: allocID}},
		"GET /v1/allocation/" + allocID: &api.Allocation{ID: allocID, EvalID: evalID, NodeID: nodeID, Name: "x.g[0]",
			ClientStatus: "running", DesiredStatus: "run", CreateTime: t0.Add(-time.Minute).UnixNano(), ModifyTime: t0.Add(-time.Minute).UnixNano()},
	}}
	out, errb, code := run(t, f.server(t), "status", "8ba8")
	if code != 0 || !strings.Contains(out, "Name                = x.g[0]") {
		t.Fatalf("code %d out %q err %q", code, out, errb)
	}
}

func TestStatusWithoutArgsListsJobs(t *testing.T) {
	f := &fake{routes: map[string]any{"GET /v1/jobs": []*api.JobListStub{}}}
	out, _, code := run(t, f.server(t), "status")
	if code != 0 || out != "No running jobs\n" {
		t.Fatalf("code %d out %q", code, out)
	}
}

// A stale -check-index says what the server found, once, and that the job
// was not updated, as Nomad's CLI does; it printed the prefix twice around
// the client's "Unexpected response code: 400 (...)" wrapping.
func TestJobRunStaleCheckIndex(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Enforcing job modify index 3: job exists with conflicting job modify index: 44", http.StatusBadRequest)
	}))
	t.Cleanup(srv.Close)
	_, errb, code := run(t, srv, "job", "run", "-check-index", "3", minimal)
	want := "Enforcing job modify index 3: job exists with conflicting job modify index: 44\nJob not updated\n"
	if code != 1 || errb != want {
		t.Fatalf("code %d, stderr %q, want %q", code, errb, want)
	}
}

// An evaluation that hands its work on (a system job's next rolling-update
// batch) is followed to the next one, as Nomad's monitor does; the monitor
// stopped after the first batch.
func TestJobRunFollowsNextEval(t *testing.T) {
	next := "77777777-0000-4000-8000-000000000009"
	f := &fake{routes: map[string]any{
		"PUT /v1/jobs": &api.JobRegisterResponse{EvalID: evalID},
		"GET /v1/evaluation/" + evalID: &api.Evaluation{ID: evalID, JobID: "hello", Type: "system", Status: "complete",
			NextEval: next},
		"GET /v1/evaluation/" + evalID + "/allocations": []*api.AllocationListStub{},
		"GET /v1/evaluation/" + next:                    &api.Evaluation{ID: next, JobID: "hello", Type: "system", Status: "complete"},
		"GET /v1/evaluation/" + next + "/allocations": []*api.AllocationListStub{
			{ID: allocID, NodeID: nodeID, TaskGroup: "g", Name: "hello.g[0]"},
		},
	}}
	out, errb, code := run(t, f.server(t), "job", "run", minimal)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	for _, want := range []string{`Monitoring next evaluation "77777777"`, `Evaluation "77777777" finished with status "complete"`,
		`Allocation "` + allocID[:8] + `" created`} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

// job run submits the jobspec's source with the job, as Nomad's CLI does
// (the server keeps it per version; the UI's Definition tab shows it), with
// the -var flags; a -json job's source is submitted as JSON.
func TestJobRunSubmitsSource(t *testing.T) {
	var got []*api.JobRegisterRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req api.JobRegisterRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("%s %s: %v", r.Method, r.URL.Path, err)
		}
		got = append(got, &req)
		json.NewEncoder(w).Encode(&api.JobRegisterResponse{EvalID: evalID})
	}))
	t.Cleanup(srv.Close)
	src := "variable \"x\" {\n  default = \"0\"\n}\n\njob \"hello\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config {\n        command = \"/bin/echo\"\n        args    = [var.x]\n      }\n    }\n  }\n}\n"
	hclFile := filepath.Join(t.TempDir(), "job.hcl")
	if err := os.WriteFile(hclFile, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errb, code := run(t, srv, "job", "run", "-detach", "-var", "x=1", hclFile); code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	if len(got) != 1 || got[0].Submission == nil || got[0].Submission.Source != src || got[0].Submission.Format != "hcl2" || got[0].Submission.VariableFlags["x"] != "1" {
		t.Fatalf("job run's register request carried submission %+v, want the file's source", got[0].Submission)
	}
	out, _, code := run(t, nil, "job", "run", "-output", minimal)
	if code != 0 {
		t.Fatal(out)
	}
	jsonFile := filepath.Join(t.TempDir(), "job.json")
	if err := os.WriteFile(jsonFile, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errb, code := run(t, srv, "job", "run", "-detach", "-json", jsonFile); code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	if len(got) != 2 || got[1].Submission == nil || got[1].Submission.Source != out || got[1].Submission.Format != "json" {
		t.Fatalf("job run -json's submission %+v", got[1].Submission)
	}
}
