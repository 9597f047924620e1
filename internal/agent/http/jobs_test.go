package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

func testAPIJob() *api.Job {
	return &api.Job{
		ID:          new("web"),
		Datacenters: []string{"dc1"},
		TaskGroups: []*api.TaskGroup{{
			Name:  new("frontend"),
			Count: new(2),
			Networks: []*api.NetworkResource{{
				DynamicPorts: []api.Port{{Label: "http", To: 8080}},
			}},
			Tasks: []*api.Task{{
				Name:      "server",
				Driver:    "raw_exec",
				Config:    map[string]any{"command": "/bin/sleep"},
				Resources: &api.Resources{CPU: new(200), MemoryMB: new(64)},
				LogConfig: &api.LogConfig{MaxFiles: new(2)},
			}},
		}},
	}
}

func TestJobsRegister(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Job.Register", structs.JobRegisterResponse{EvalID: "eval-1", EvalCreateIndex: 7, JobModifyIndex: 7, QueryMeta: structs.QueryMeta{Index: 7}})

	resp, wm, err := env.client.Jobs().RegisterOpts(testAPIJob(), &api.RegisterOptions{
		EnforceIndex: true, ModifyIndex: 3, PreserveCounts: true, EvalPriority: 80,
		Submission: &api.JobSubmission{Source: "job \"web\" {}", Format: "hcl2"},
	}, &api.WriteOptions{Namespace: "prod", AuthToken: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.EvalID != "eval-1" || resp.JobModifyIndex != 7 || wm.LastIndex != 7 {
		t.Fatalf("response: %+v %+v", resp, wm)
	}
	args := env.rpc.last(t, "Job.Register").(*structs.JobRegisterRequest)
	j := args.Job
	switch {
	case j.ID != "web" || j.Name != "web" || j.Type != "service" || j.Priority != 50:
		t.Fatalf("job defaults not applied: %+v", j)
	case j.Namespace != "prod" || args.Namespace != "prod":
		t.Fatalf("namespace from the request not applied: job %q write %q", j.Namespace, args.Namespace)
	case j.Region != "global" || args.Region != "global":
		t.Fatalf("region: job %q write %q", j.Region, args.Region)
	case args.AuthToken != "secret":
		t.Fatalf("token not passed: %q", args.AuthToken)
	case !args.EnforceIndex || args.JobModifyIndex != 3 || !args.PreserveCounts || args.EvalPriority != 80:
		t.Fatalf("register options lost: %+v", args)
	case args.Submission == nil || args.Submission.Format != "hcl2" || args.Submission.JobID != "web" || args.Submission.Namespace != "prod":
		t.Fatalf("submission: %+v", args.Submission)
	}
	task := j.TaskGroups[0].Tasks[0]
	if task.Resources.CPU != 200 || task.Resources.MemoryMB != 64 || task.LogConfig.MaxFiles != 2 || task.LogConfig.MaxFileSizeMB != 10 {
		t.Fatalf("task not converted: %+v %+v", task.Resources, task.LogConfig)
	}
	if j.TaskGroups[0].Networks[0].DynamicPorts[0].To != 8080 {
		t.Fatalf("ports not converted: %+v", j.TaskGroups[0].Networks[0])
	}
}

func TestJobsRegisterRejectsBadRequests(t *testing.T) {
	env := newEnv(t, nil)
	cases := []struct {
		name, method, path, body string
		code                     int
		msg                      string
	}{
		{"malformed", "PUT", "/v1/jobs", `{"Job": {`, 400, "Failed to decode request body"},
		{"no job", "PUT", "/v1/jobs", `{}`, 400, "Job must be specified"},
		{"no id", "POST", "/v1/jobs", `{"Job": {"Name": "x"}}`, 400, "Job ID hasn't been provided"},
		{"id mismatch", "PUT", "/v1/job/other", `{"Job": {"ID": "web"}}`, 400, "Job ID does not match name"},
		{"wrong method", "DELETE", "/v1/jobs", ``, 405, "Invalid method"},
		{"wrong method parse", "GET", "/v1/jobs/parse", ``, 405, "Invalid method"},
		{"unknown job sub-route", "GET", "/v1/job/web/nope", ``, 404, ""},
		{"unknown dispatch sub-route", "PUT", "/v1/job/web/dispatch/other", `{}`, 404, ""},
		{"periodic without force", "PUT", "/v1/job/web/periodic", `{}`, 404, ""},
		{"unknown route", "GET", "/v1/nope", ``, 404, ""},
		{"bad index", "GET", "/v1/jobs?index=abc", ``, 400, "Invalid index"},
		{"bad wait", "GET", "/v1/jobs?wait=soon", ``, 400, "Invalid wait time"},
		{"bad purge", "DELETE", "/v1/job/web?purge=maybe", ``, 400, "purge"},
		{"bad eval priority", "DELETE", "/v1/job/web?eval_priority=101", ``, 400, "Eval priority"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, hdr, body := env.raw(t, tc.method, tc.path, tc.body)
			if code != tc.code || !strings.Contains(body, tc.msg) {
				t.Fatalf("got %d %q, want %d containing %q", code, body, tc.code, tc.msg)
			}
			if code != 404 && !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
				t.Fatalf("error content type %q", hdr.Get("Content-Type"))
			}
		})
	}
	env.rpc.mu.Lock()
	defer env.rpc.mu.Unlock()
	for _, c := range env.rpc.calls {
		if c.Method == "Job.Register" || c.Method == "Job.Deregister" {
			t.Fatalf("a rejected request reached the server: %+v", c)
		}
	}
}

func TestJobsRegisterValidationErrorFromServer(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.fail("Job.Register", structs.NewErrCoded(400, "Task group frontend validation failed: Count must be positive"))
	_, _, err := env.client.Jobs().Register(testAPIJob(), nil)
	wantStatus(t, err, 400, "Count must be positive")

	// A coded error that crossed an RPC connection as text keeps its code.
	env.rpc.fail("Job.Register", errors.New("400: Job priority must be between [1, 100]"))
	_, _, err = env.client.Jobs().Register(testAPIJob(), nil)
	wantStatus(t, err, 400, "Job priority")

	env.rpc.fail("Job.Register", structs.ErrNoLeader)
	_, _, err = env.client.Jobs().Register(testAPIJob(), nil)
	wantStatus(t, err, 500, "No cluster leader")

	env.rpc.fail("Job.Register", errors.New("rpc error: Permission denied"))
	_, _, err = env.client.Jobs().Register(testAPIJob(), nil)
	wantStatus(t, err, 403, "Permission denied")
}

func TestJobsRegisterByIDPath(t *testing.T) {
	env := newEnv(t, nil)
	code, hdr, _ := env.raw(t, "POST", "/v1/job/web?region=east", `{"Job": {"ID": "web", "Namespace": "team"}}`)
	if code != 200 || hdr.Get("X-Nomad-Index") != "0" {
		t.Fatalf("got %d, index %q", code, hdr.Get("X-Nomad-Index"))
	}
	args := env.rpc.last(t, "Job.Register").(*structs.JobRegisterRequest)
	if args.Job.Region != "east" || args.Region != "east" || args.Job.Namespace != "team" || args.Namespace != "team" {
		t.Fatalf("placement: job %s/%s write %s/%s", args.Job.Region, args.Job.Namespace, args.Region, args.Namespace)
	}
}

func TestJobsList(t *testing.T) {
	env := newEnv(t, nil)
	// Empty list: [] and the blocking-query headers.
	env.rpc.reply("Job.List", structs.JobListResponse{QueryMeta: meta(42)})
	code, hdr, body := env.raw(t, "GET", "/v1/jobs", "")
	if code != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("empty list: %d %q", code, body)
	}
	if hdr.Get("X-Nomad-Index") != "42" || hdr.Get("X-Nomad-KnownLeader") != "true" || hdr.Get("X-Nomad-LastContact") != "25" {
		t.Fatalf("headers: %v", hdr)
	}
	if hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("content type %q", hdr.Get("Content-Type"))
	}

	env.rpc.reply("Job.List", structs.JobListResponse{
		Jobs: []*structs.JobListStub{
			{ID: "b", Name: "b", Type: "batch", Status: "running", JobSummary: &structs.JobSummary{JobID: "b", Summary: map[string]structs.TaskGroupSummary{"g": {Running: 1}}}},
			{ID: "a", Name: "a", Type: "service", Status: "pending"},
		},
		QueryMeta: structs.QueryMeta{Index: 50, KnownLeader: false, LastContact: 2 * time.Second},
	})
	jobs, qm, err := env.client.Jobs().List(&api.QueryOptions{
		WaitIndex: 42, WaitTime: 10 * time.Minute, AllowStale: true, Prefix: "a", Namespace: "*",
		Filter: `Status == "running"`, PerPage: 5, NextToken: "tok", Reverse: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].ID != "a" || jobs[1].JobSummary.Summary["g"].Running != 1 {
		t.Fatalf("jobs: %+v", jobs)
	}
	if qm.LastIndex != 50 || qm.KnownLeader || qm.LastContact != 2*time.Second {
		t.Fatalf("query meta: %+v", qm)
	}
	args := env.rpc.last(t, "Job.List").(*structs.JobListRequest)
	q := args.QueryOptions
	if q.MinQueryIndex != 42 || q.MaxQueryTime != 300*time.Second || !q.AllowStale || q.Prefix != "a" ||
		q.Namespace != "*" || q.Filter != `Status == "running"` || q.PerPage != 5 || q.NextToken != "tok" || !q.Reverse || q.Region != "global" {
		t.Fatalf("query options: %+v", q)
	}

	// ?pretty indents.
	_, _, body = env.raw(t, "GET", "/v1/jobs?pretty", "")
	if !strings.Contains(body, "\n    {") {
		t.Fatalf("pretty output not indented: %q", body)
	}
	// stale=false is a consistent read; no namespace means default.
	env.raw(t, "GET", "/v1/jobs?stale=false&wait=5s", "")
	q = env.rpc.last(t, "Job.List").(*structs.JobListRequest).QueryOptions
	if q.AllowStale || q.Namespace != "default" || q.MaxQueryTime != 5*time.Second {
		t.Fatalf("query options: %+v", q)
	}
}

func TestJobInfoAndSubresources(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Job.GetJob", structs.SingleJobResponse{
		Job:       &structs.Job{ID: "web", Name: "web", Type: "service", Priority: 50, Status: "running", TaskGroups: []*structs.TaskGroup{{Name: "g", Count: 2, Tasks: []*structs.Task{{Name: "t", Driver: "raw_exec", KillTimeout: 5 * time.Second, Resources: &structs.Resources{CPU: 100, MemoryMB: 300}}}}}},
		QueryMeta: meta(9),
	})
	job, qm, err := env.client.Jobs().Info("web", nil)
	if err != nil {
		t.Fatal(err)
	}
	if *job.ID != "web" || *job.TaskGroups[0].Count != 2 || *job.TaskGroups[0].Tasks[0].Resources.CPU != 100 || *job.TaskGroups[0].Tasks[0].KillTimeout != 5*time.Second || qm.LastIndex != 9 {
		t.Fatalf("job: %+v meta %+v", job, qm)
	}
	if id := env.rpc.last(t, "Job.GetJob").(*structs.JobSpecificRequest).JobID; id != "web" {
		t.Fatalf("job id %q", id)
	}

	// Escaped slashes stay in the ID.
	env.client.Jobs().Info("a/b", nil)
	if id := env.rpc.last(t, "Job.GetJob").(*structs.JobSpecificRequest).JobID; id != "a/b" {
		t.Fatalf("job id %q", id)
	}

	env.rpc.reply("Job.GetJob", structs.SingleJobResponse{QueryMeta: meta(9)})
	_, _, err = env.client.Jobs().Info("missing", nil)
	wantStatus(t, err, 404, "job not found")

	env.rpc.reply("Job.Allocations", structs.JobAllocationsResponse{
		Allocations: []*structs.AllocListStub{{ID: "a1", JobID: "web", TaskGroup: "g", ClientStatus: "running",
			TaskStates: map[string]*structs.TaskState{"t": {State: "running", StartedAt: time.Unix(1700000000, 0).UTC()}}}},
		QueryMeta: meta(11),
	})
	allocs, qm, err := env.client.Jobs().Allocations("web", true, nil)
	if err != nil || len(allocs) != 1 || allocs[0].ID != "a1" || allocs[0].TaskStates["t"].State != "running" || qm.LastIndex != 11 {
		t.Fatalf("allocs %+v %+v %v", allocs, qm, err)
	}
	if !env.rpc.last(t, "Job.Allocations").(*structs.JobSpecificRequest).All {
		t.Fatal("all=true not passed")
	}
	env.rpc.reply("Job.Allocations", structs.JobAllocationsResponse{QueryMeta: meta(11)})
	if _, _, body := env.raw(t, "GET", "/v1/job/web/allocations", ""); strings.TrimSpace(body) != "[]" {
		t.Fatalf("empty allocations: %q", body)
	}

	env.rpc.reply("Job.Summary", structs.JobSummaryResponse{
		JobSummary: &structs.JobSummary{JobID: "web", Namespace: "default", Summary: map[string]structs.TaskGroupSummary{"g": {Queued: 1, Running: 2}}},
		QueryMeta:  meta(12),
	})
	sum, _, err := env.client.Jobs().Summary("web", nil)
	if err != nil || sum.Summary["g"].Running != 2 || sum.Summary["g"].Queued != 1 {
		t.Fatalf("summary %+v %v", sum, err)
	}
	env.rpc.reply("Job.Summary", structs.JobSummaryResponse{QueryMeta: meta(12)})
	_, _, err = env.client.Jobs().Summary("web", nil)
	wantStatus(t, err, 404, "job not found")

	env.rpc.reply("Job.GetJobVersions", structs.JobVersionsResponse{
		Versions:  []*structs.Job{{ID: "web", Version: 1}, {ID: "web", Version: 0}},
		Diffs:     []*api.JobDiff{{Type: "Edited", ID: "web"}},
		QueryMeta: meta(13),
	})
	versions, diffs, qm, err := env.client.Jobs().Versions("web", true, nil)
	if err != nil || len(versions) != 2 || *versions[0].Version != 1 || len(diffs) != 1 || diffs[0].Type != "Edited" || qm.LastIndex != 13 {
		t.Fatalf("versions %+v diffs %+v %v", versions, diffs, err)
	}
	if !env.rpc.last(t, "Job.GetJobVersions").(*structs.JobVersionsRequest).Diffs {
		t.Fatal("diffs=true not passed")
	}

	env.rpc.reply("Job.Evaluations", structs.JobEvaluationsResponse{Evaluations: []*structs.Evaluation{{ID: "e1", Status: "complete"}}, QueryMeta: meta(14)})
	evals, _, err := env.client.Jobs().Evaluations("web", nil)
	if err != nil || len(evals) != 1 || evals[0].ID != "e1" {
		t.Fatalf("evals %+v %v", evals, err)
	}

	deadline := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	env.rpc.reply("Job.LatestDeployment", structs.SingleDeploymentResponse{
		Deployment: &structs.Deployment{ID: "d1", JobID: "web", Status: "running", TaskGroups: map[string]*structs.DeploymentState{
			"g": {DesiredTotal: 2, ProgressDeadline: 10 * time.Minute, RequireProgressBy: deadline}}},
		QueryMeta: meta(15),
	})
	dep, _, err := env.client.Jobs().LatestDeployment("web", nil)
	if err != nil || dep.ID != "d1" || !dep.TaskGroups["g"].RequireProgressBy.Equal(deadline) || dep.TaskGroups["g"].ProgressDeadline != 10*time.Minute {
		t.Fatalf("latest deployment %+v %v", dep, err)
	}
	env.rpc.reply("Job.LatestDeployment", structs.SingleDeploymentResponse{QueryMeta: meta(15)})
	if dep, _, err := env.client.Jobs().LatestDeployment("web", nil); err != nil || dep != nil {
		t.Fatalf("no deployment: %+v %v", dep, err)
	}
	env.rpc.reply("Job.Deployments", structs.DeploymentListResponse{QueryMeta: meta(16)})
	deps, _, err := env.client.Jobs().Deployments("web", true, nil)
	if err != nil || deps == nil || len(deps) != 0 {
		t.Fatalf("deployments %+v %v", deps, err)
	}
}

func TestJobDeregister(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Job.Deregister", structs.JobDeregisterResponse{EvalID: "e9", EvalCreateIndex: 20, QueryMeta: structs.QueryMeta{Index: 20}})
	evalID, wm, err := env.client.Jobs().Deregister("web", true, &api.WriteOptions{Namespace: "prod"})
	if err != nil || evalID != "e9" || wm.LastIndex != 20 {
		t.Fatalf("deregister: %q %+v %v", evalID, wm, err)
	}
	args := env.rpc.last(t, "Job.Deregister").(*structs.JobDeregisterRequest)
	if args.JobID != "web" || !args.Purge || args.Namespace != "prod" {
		t.Fatalf("args %+v", args)
	}
	_, _, err = env.client.Jobs().DeregisterOpts("web", &api.DeregisterOptions{Global: true, EvalPriority: 90, NoShutdownDelay: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	args = env.rpc.last(t, "Job.Deregister").(*structs.JobDeregisterRequest)
	if args.Purge || !args.Global || args.EvalPriority != 90 || !args.NoShutdownDelay {
		t.Fatalf("args %+v", args)
	}
}

func TestJobPlanValidateEvaluate(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Job.Plan", structs.JobPlanResponse{
		JobModifyIndex: 5,
		Diff:           &api.JobDiff{Type: "Added", ID: "web"},
		Annotations:    &structs.PlanAnnotations{DesiredTGUpdates: map[string]*api.DesiredUpdates{"frontend": {Place: 2}}},
		FailedTGAllocs: map[string]*structs.AllocMetric{"frontend": {NodesEvaluated: 3, AllocationTime: time.Millisecond}},
		WriteMeta:      structs.WriteMeta{Index: 5},
	})
	plan, _, err := env.client.Jobs().Plan(testAPIJob(), true, nil)
	if err != nil || plan.Diff.Type != "Added" || plan.Annotations.DesiredTGUpdates["frontend"].Place != 2 || plan.FailedTGAllocs["frontend"].NodesEvaluated != 3 {
		t.Fatalf("plan %+v %v", plan, err)
	}
	if pa := env.rpc.last(t, "Job.Plan").(*structs.JobPlanRequest); !pa.Diff || pa.Job.ID != "web" || pa.Job.TaskGroups[0].Count != 2 {
		t.Fatalf("plan args %+v", pa)
	}

	env.rpc.reply("Job.Validate", structs.JobValidateResponse{ValidationErrors: []string{"group: count must be positive"}, Error: "1 error"})
	vr, _, err := env.client.Jobs().Validate(testAPIJob(), nil)
	if err != nil || len(vr.ValidationErrors) != 1 || vr.Error != "1 error" {
		t.Fatalf("validate %+v %v", vr, err)
	}
	if code, _, body := env.raw(t, "PUT", "/v1/validate/job", `{}`); code != 400 || !strings.Contains(body, "Job must be specified") {
		t.Fatalf("validate without job: %d %q", code, body)
	}

	env.rpc.reply("Job.Evaluate", structs.JobRegisterResponse{EvalID: "e2", QueryMeta: structs.QueryMeta{Index: 6}})
	evalID, wm, err := env.client.Jobs().EvaluateWithOpts("web", api.EvalOptions{ForceReschedule: true}, nil)
	if err != nil || evalID != "e2" || wm.LastIndex != 6 {
		t.Fatalf("evaluate %q %+v %v", evalID, wm, err)
	}
	if ea := env.rpc.last(t, "Job.Evaluate").(*structs.JobEvaluateRequest); ea.JobID != "web" || !ea.EvalOptions.ForceReschedule {
		t.Fatalf("evaluate args %+v", ea)
	}
	if _, _, err := env.client.Jobs().ForceEvaluate("web", nil); err != nil {
		t.Fatalf("evaluate without body: %v", err)
	}
}

func TestJobsParse(t *testing.T) {
	var gotVars string
	env := newEnv(t, func(c *Config) {
		c.ParseJob = func(hcl, vars string, canonicalize bool) (*api.Job, error) {
			gotVars = vars
			if !strings.Contains(hcl, "job") {
				return nil, errors.New("input.hcl:1,1-2: Argument or block definition required")
			}
			j := &api.Job{ID: new("example"), TaskGroups: []*api.TaskGroup{{Name: new("cache")}}}
			if canonicalize {
				j.Canonicalize()
			}
			return j, nil
		}
	})
	job, err := env.client.Jobs().ParseHCL(`job "example" {}`, true)
	if err != nil || *job.ID != "example" || job.Type == nil || *job.Type != "service" {
		t.Fatalf("parse %+v %v", job, err)
	}
	if _, err := env.client.Jobs().ParseHCLOpts(&api.JobsParseRequest{JobHCL: `job "x" {}`, Variables: `a = 1`}); err != nil || gotVars != "a = 1" {
		t.Fatalf("variables not passed: %q %v", gotVars, err)
	}
	_, err = env.client.Jobs().ParseHCL(`}`, false)
	wantStatus(t, err, 400, "Argument or block definition required")
	_, err = env.client.Jobs().ParseHCL(``, false)
	wantStatus(t, err, 400, "Job spec is empty")

	noParser := newEnv(t, nil)
	_, err = noParser.client.Jobs().ParseHCL(`job "x" {}`, false)
	wantStatus(t, err, http.StatusNotImplemented, "not available")
}

// ?explain=true reaches the RPC and Explain rides next to the plan fields;
// without it the response has no Explain key at all.
func TestJobPlanExplain(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Job.Plan", structs.JobPlanResponse{JobModifyIndex: 5, WriteMeta: structs.WriteMeta{Index: 5}})
	code, _, body := env.raw(t, "PUT", "/v1/job/web/plan", `{"Job":{"ID":"web","Name":"web"}}`)
	if code != 200 || strings.Contains(body, "Explain") {
		t.Fatalf("plain plan: %d %s", code, body)
	}
	if pa := env.rpc.last(t, "Job.Plan").(*structs.JobPlanRequest); pa.Explain || pa.ExplainAll {
		t.Fatalf("explain asked without the parameter: %+v", pa)
	}

	env.rpc.reply("Job.Plan", structs.JobPlanResponse{JobModifyIndex: 5, WriteMeta: structs.WriteMeta{Index: 5},
		Explain: &structs.PlanExplain{TaskGroups: map[string]*structs.TGExplain{"frontend": {
			NodesEvaluated: 2, NodesScored: 1, Filtered: map[string]int{"${attr.kernel.name} = linux": 1},
			Nodes: []*structs.NodeExplain{{NodeID: "n1", NodeName: "a", Scores: map[string]float64{"binpack": 0.5}, Final: 0.5, Placed: 1}},
		}}}})
	code, _, body = env.raw(t, "PUT", "/v1/job/web/plan?explain=true&verbose=true", `{"Job":{"ID":"web","Name":"web"}}`)
	if code != 200 {
		t.Fatalf("explain plan: %d %s", code, body)
	}
	if pa := env.rpc.last(t, "Job.Plan").(*structs.JobPlanRequest); !pa.Explain || !pa.ExplainAll {
		t.Fatalf("explain not passed through: %+v", pa)
	}
	var got struct {
		api.JobPlanResponse
		Explain *structs.PlanExplain
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	g := got.Explain.TaskGroups["frontend"]
	if got.JobModifyIndex != 5 || g == nil || g.Filtered["${attr.kernel.name} = linux"] != 1 || g.Nodes[0].Scores["binpack"] != 0.5 {
		t.Fatalf("response = %s", body)
	}
	env.raw(t, "PUT", "/v1/job/web/plan", `{"Job":{"ID":"web","Name":"web"},"Explain":true}`)
	if pa := env.rpc.last(t, "Job.Plan").(*structs.JobPlanRequest); !pa.Explain || pa.ExplainAll {
		t.Fatalf("explain in the body not passed through: %+v", pa)
	}
	if code, _, body := env.raw(t, "PUT", "/v1/job/web/plan?explain=maybe", `{"Job":{"ID":"web","Name":"web"}}`); code != 400 {
		t.Fatalf("bad explain value: %d %s", code, body)
	}
}
