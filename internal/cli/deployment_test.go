package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	mcli "github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
)

const (
	deployID  = "06ca68a2-0000-4000-8000-000000000004"
	deployID2 = "06ca68ff-0000-4000-8000-000000000005"
)

// seqFake answers each "METHOD /path" with the next of its canned bodies
// (the last one repeats), with an X-Nomad-Index that grows with each, so a
// blocking-query loop sees a deployment move through states.
type seqFake struct {
	mu     sync.Mutex
	routes map[string][]any
	calls  map[string]int
	seen   []string
}

func (f *seqFake) server(t *testing.T) *httptest.Server {
	f.calls = map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		key := r.Method + " " + r.URL.Path
		f.seen = append(f.seen, key+"?"+r.URL.RawQuery)
		bodies, ok := f.routes[key]
		if !ok {
			http.Error(w, "no route "+key, http.StatusNotFound)
			return
		}
		i := min(f.calls[key], len(bodies)-1)
		f.calls[key]++
		if e, ok := bodies[i].(httpError); ok {
			http.Error(w, e.msg, e.code)
			return
		}
		w.Header().Set("X-Nomad-Index", fmt.Sprint(10+i))
		json.NewEncoder(w).Encode(bodies[i])
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (f *seqFake) requested(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.seen {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

type httpError struct {
	code int
	msg  string
}

func one(v any) []any { return []any{v} }

// deployment returns the sample deployment of job "example" version 1 with
// one group in the given state.
func deployment(status, desc string, placed, healthy, unhealthy int) *api.Deployment {
	return &api.Deployment{
		ID: deployID, Namespace: "default", JobID: "example", JobVersion: 1, JobSpecModifyIndex: 7, JobModifyIndex: 7,
		Status: status, StatusDescription: desc, CreateIndex: 8,
		TaskGroups: map[string]*api.DeploymentState{"cache": {
			DesiredTotal: 3, PlacedAllocs: placed, HealthyAllocs: healthy, UnhealthyAllocs: unhealthy,
			ProgressDeadline: 10 * time.Minute, RequireProgressBy: t0.Add(10 * time.Minute),
		}},
	}
}

func canaryDeployment() *api.Deployment {
	return &api.Deployment{
		ID: deployID, JobID: "example", JobVersion: 4, Status: "running",
		StatusDescription: "Deployment is running but requires manual promotion",
		TaskGroups: map[string]*api.DeploymentState{
			"web": {AutoRevert: true, DesiredTotal: 4, DesiredCanaries: 1, PlacedCanaries: []string{allocID}, PlacedAllocs: 1, HealthyAllocs: 1,
				ProgressDeadline: 10 * time.Minute, RequireProgressBy: t0.Add(9 * time.Minute)},
			"cache": {DesiredTotal: 2, PlacedAllocs: 2, HealthyAllocs: 1, UnhealthyAllocs: 1},
		},
	}
}

func TestDeploymentStatusTable(t *testing.T) {
	f := &seqFake{routes: map[string][]any{"GET /v1/deployments": one([]*api.Deployment{canaryDeployment()})}}
	out, errb, code := run(t, f.server(t), "deployment", "status", "06ca")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	// Auto Revert, Promoted and Canaries appear because a group has them;
	// a group without canaries says N/A, one without a deadline too.
	golden(t, "deployment_status_canary.txt", out)

	f = &seqFake{routes: map[string][]any{
		"GET /v1/deployments": one([]*api.Deployment{deployment("successful", "Deployment completed successfully", 3, 3, 0)}),
		"GET /v1/deployment/allocations/" + deployID: one([]*api.AllocationListStub{{ID: allocID, NodeID: nodeID, TaskGroup: "cache",
			JobVersion: 1, DesiredStatus: "run", ClientStatus: "running", DeploymentStatus: &api.AllocDeploymentStatus{Healthy: ptr(true)},
			CreateTime: t0.Add(-time.Minute).UnixNano(), ModifyTime: t0.Add(-time.Minute).UnixNano()}}),
	}}
	out, errb, code = run(t, f.server(t), "deployment", "status", "-verbose", "06ca")
	if code != 0 || !strings.Contains(out, "ID          = "+deployID+"\n") ||
		!regexp.MustCompile(`(?m)^Allocations\nID +Node ID +Task Group +Version +Desired +Status +Healthy +Created +Modified\n`+allocID+` +`+nodeID+` +cache +1 +run +running +true +`).MatchString(out) {
		t.Fatalf("-verbose: code %d %s\n%s", code, errb, out)
	}
	out, errb, code = run(t, f.server(t), "deployment", "status", deployID)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "deployment_status.txt", out)

	out, _, code = run(t, f.server(t), "deployment", "status", "-json", "06ca")
	var d api.Deployment
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d.ID != deployID || d.TaskGroups["cache"].DesiredTotal != 3 {
		t.Fatalf("-json: code %d\n%s", code, out)
	}
	out, _, code = run(t, f.server(t), "deployment", "status", "-t", "{{.Status}}/{{.JobVersion}}", "06ca")
	if code != 0 || out != "successful/1\n" {
		t.Fatalf("-t: code %d %q", code, out)
	}
	if _, errb, code := run(t, f.server(t), "deployment", "status", "-monitor", "-json", "06ca"); code != 1 || !strings.Contains(errb, "-monitor flag cannot be used") {
		t.Fatalf("-monitor -json: code %d %q", code, errb)
	}
}

func TestDeploymentPrefixErrors(t *testing.T) {
	a := deployment("running", "Deployment is running", 1, 0, 0)
	b := deployment("failed", "Failed due to progress deadline", 1, 0, 1)
	b.ID, b.CreateIndex, b.JobVersion = deployID2, 9, 2
	f := &seqFake{routes: map[string][]any{"GET /v1/deployments": {[]*api.Deployment{a, b}, []*api.Deployment{}, []*api.Deployment{a, b}}}}
	srv := f.server(t)
	_, errb, code := run(t, srv, "deployment", "status", "06ca")
	if code != 1 || !strings.Contains(errb, "Prefix matched multiple deployments") || !strings.Contains(errb, deployID) || !strings.Contains(errb, deployID2) {
		t.Fatalf("ambiguous: code %d\n%s", code, errb)
	}
	_, errb, code = run(t, srv, "deployment", "fail", "dead")
	if code != 1 || !strings.Contains(errb, `No deployment(s) with prefix or ID "dead" found`) {
		t.Fatalf("unknown: code %d\n%s", code, errb)
	}
	// A full ID among several matches is that one.
	out, errb, code := run(t, srv, "deployment", "status", deployID)
	if code != 0 || !strings.Contains(out, "ID          = 06ca68a2\n") {
		t.Fatalf("exact: code %d %s\n%s", code, errb, out)
	}
	if _, errb, code := run(t, srv, "deployment", "status", "0"); code != 1 || !strings.Contains(errb, "at least two characters") {
		t.Fatalf("one character: code %d %q", code, errb)
	}
}

func TestDeploymentList(t *testing.T) {
	a := deployment("successful", "Deployment completed successfully", 3, 3, 0)
	b := deployment("running", "Deployment is running", 1, 0, 0)
	b.ID, b.CreateIndex, b.JobVersion = deployID2, 9, 2
	f := &seqFake{routes: map[string][]any{"GET /v1/deployments": {[]*api.Deployment{a, b}, []*api.Deployment{}}}}
	srv := f.server(t)
	out, errb, code := run(t, srv, "deployment", "list")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "deployment_list.txt", out)
	if out, _, code := run(t, srv, "deployment", "list"); code != 0 || out != "No deployments found\n" {
		t.Fatalf("empty: code %d %q", code, out)
	}
}

// The write verbs refuse a deployment that has ended, before sending
// anything, and name it and its status.
func TestDeploymentWritesRefuseEndedDeployment(t *testing.T) {
	for _, verb := range []string{"promote", "pause", "resume", "fail"} {
		f := &seqFake{routes: map[string][]any{"GET /v1/deployments": one([]*api.Deployment{
			deployment("successful", "Deployment completed successfully", 3, 3, 0)})}}
		_, errb, code := run(t, f.server(t), "deployment", verb, "06ca")
		if code != 1 || !strings.Contains(errb, `Deployment "06ca68a2" has already ended (status "successful")`) {
			t.Errorf("%s: code %d %q", verb, code, errb)
		}
		if n := f.requested("PUT "); n != 0 {
			t.Errorf("%s: %d writes sent for an ended deployment", verb, n)
		}
	}
}

func TestDeploymentPauseResumeFail(t *testing.T) {
	running := one([]*api.Deployment{deployment("running", "Deployment is running", 1, 0, 0)})
	f := &seqFake{routes: map[string][]any{
		"GET /v1/deployments":                    running,
		"PUT /v1/deployment/pause/" + deployID:   one(&api.DeploymentUpdateResponse{}),
		"PUT /v1/deployment/fail/" + deployID:    one(&api.DeploymentUpdateResponse{EvalID: evalID, RevertedJobVersion: ptr(uint64(0))}),
		"PUT /v1/deployment/unblock/" + deployID: one(httpError{400, "deployment is not multiregion"}),
	}}
	srv := f.server(t)
	if out, errb, code := run(t, srv, "deployment", "pause", "06ca"); code != 0 || out != "Deployment \"06ca68a2\" paused\n" {
		t.Fatalf("pause: code %d %q %q", code, out, errb)
	}
	if out, errb, code := run(t, srv, "deployment", "fail", "-detach", "06ca"); code != 0 ||
		out != "Deployment \"06ca68a2\" failed. Auto-reverted to job version 0.\nEvaluation ID: "+evalID+"\n" {
		t.Fatalf("fail: code %d %q %q", code, out, errb)
	}
	if _, errb, code := run(t, srv, "deployment", "unblock", "06ca"); code != 1 || !strings.Contains(errb, "deployment is not multiregion") {
		t.Fatalf("unblock: code %d %q", code, errb)
	}
}

func TestDeploymentPromoteGroups(t *testing.T) {
	f := &seqFake{routes: map[string][]any{
		"GET /v1/deployments":                    one([]*api.Deployment{canaryDeployment()}),
		"PUT /v1/deployment/promote/" + deployID: one(&api.DeploymentUpdateResponse{EvalID: evalID}),
	}}
	srv := f.server(t)
	_, errb, code := run(t, srv, "deployment", "promote", "-group", "nope", "06ca")
	if code != 1 || !strings.Contains(errb, `Deployment "06ca68a2" has no task group "nope" (it deploys: cache, web)`) || f.requested("PUT ") != 0 {
		t.Fatalf("unknown group: code %d %q", code, errb)
	}
	out, errb, code := run(t, srv, "deployment", "promote", "-detach", "-group", "web", "06ca")
	if code != 0 || out != "Evaluation ID: "+evalID+"\n" {
		t.Fatalf("promote: code %d %q %q", code, out, errb)
	}
}

func TestJobPromote(t *testing.T) {
	f := &seqFake{routes: map[string][]any{
		"GET /v1/job/example":                    one(sampleJob()),
		"GET /v1/job/example/deployment":         {nil, canaryDeployment()},
		"PUT /v1/deployment/promote/" + deployID: one(&api.DeploymentUpdateResponse{EvalID: evalID}),
	}}
	srv := f.server(t)
	if _, errb, code := run(t, srv, "job", "promote", "example"); code != 1 || !strings.Contains(errb, `Job "example" has no deployment to promote`) {
		t.Fatalf("no deployment: code %d %q", code, errb)
	}
	out, errb, code := run(t, srv, "job", "promote", "-detach", "example")
	if code != 0 || out != "Evaluation ID: "+evalID+"\n" {
		t.Fatalf("promote: code %d %q %q", code, out, errb)
	}
}

func TestJobDeployments(t *testing.T) {
	a := deployment("successful", "Deployment completed successfully", 3, 3, 0)
	b := deployment("running", "Deployment is running", 1, 0, 0)
	b.ID, b.CreateIndex, b.JobVersion = deployID2, 9, 2
	f := &seqFake{routes: map[string][]any{
		"GET /v1/job/example":             one(sampleJob()),
		"GET /v1/job/example/deployments": one([]*api.Deployment{a, b}),
		"GET /v1/job/example/deployment":  one(b),
	}}
	srv := f.server(t)
	out, errb, code := run(t, srv, "job", "deployments", "example")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "deployment_list.txt", out)
	out, _, code = run(t, srv, "job", "deployments", "-latest", "example")
	if code != 0 || !strings.HasPrefix(out, "ID          = 06ca68ff\n") || !strings.Contains(out, "Deployed\nTask Group") {
		t.Fatalf("-latest: code %d\n%s", code, out)
	}
	out, _, code = run(t, srv, "job", "deployments", "-json", "example")
	var ds []*api.Deployment
	if code != 0 || json.Unmarshal([]byte(out), &ds) != nil || len(ds) != 2 {
		t.Fatalf("-json: code %d\n%s", code, out)
	}
}

func TestJobStatusShowsLatestDeployment(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/job/example": sampleJob(),
		"GET /v1/job/example/summary": &api.JobSummary{JobID: "example", Summary: map[string]api.TaskGroupSummary{
			"cache": {Running: 2, Starting: 1},
		}},
		"GET /v1/job/example/evaluations": []*api.Evaluation{{ID: evalID, Priority: 50, TriggeredBy: "job-register", Status: "complete", CreateIndex: 5}},
		"GET /v1/job/example/deployment":  deployment("running", "Deployment is running", 3, 2, 0),
		"GET /v1/job/example/allocations": []*api.AllocationListStub{},
	}}
	out, errb, code := run(t, f.server(t), "job", "status", "example")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "job_status_deployment.txt", out)
}

// jobRunRoutes is a registration whose evaluation completes inside
// deployment deployID, which then moves through states.
func jobRunRoutes(evalDeployment string, states ...*api.Deployment) map[string][]any {
	bodies := make([]any, len(states))
	for i, s := range states {
		bodies[i] = s
	}
	return map[string][]any{
		"PUT /v1/jobs": one(&api.JobRegisterResponse{EvalID: evalID}),
		"GET /v1/evaluation/" + evalID: one(&api.Evaluation{ID: evalID, JobID: "example", Type: "service", Namespace: "default",
			Status: "complete", DeploymentID: evalDeployment, JobModifyIndex: 7}),
		"GET /v1/evaluation/" + evalID + "/allocations": one([]*api.AllocationListStub{{ID: allocID, NodeID: nodeID, TaskGroup: "cache", Name: "example.cache[0]"}}),
		"GET /v1/deployment/" + deployID:                bodies,
		"GET /v1/deployment/allocations/" + deployID:    one([]*api.AllocationListStub{}),
	}
}

// Not on a terminal, `job run` follows the deployment with a line per
// change and ends with its status and final table: exit 0 on success.
func TestJobRunFollowsDeployment(t *testing.T) {
	f := &seqFake{routes: jobRunRoutes(deployID,
		deployment("running", "Deployment is running", 1, 0, 0),
		deployment("running", "Deployment is running", 1, 0, 0),
		deployment("running", "Deployment is running", 3, 1, 0),
		deployment("successful", "Deployment completed successfully", 3, 3, 0))}
	out, errb, code := run(t, f.server(t), "job", "run", minimal)
	if code != 0 {
		t.Fatalf("code %d: %s\n%s", code, errb, out)
	}
	golden(t, "job_run_deployment.txt", out)
}

func TestJobRunDeploymentFailureExits1(t *testing.T) {
	f := &seqFake{routes: jobRunRoutes(deployID,
		deployment("running", "Deployment is running", 3, 0, 0),
		deployment("failed", "Failed due to unhealthy allocations", 3, 0, 3))}
	out, _, code := run(t, f.server(t), "job", "run", minimal)
	if code != 1 || !strings.Contains(out, `Deployment "06ca68a2" failed`) || !strings.Contains(out, "Description = Failed due to unhealthy allocations") {
		t.Fatalf("code %d\n%s", code, out)
	}
}

// A failed deployment that rolls back is followed by the rollback's
// deployment; the exit code stays 1 (the version asked for does not run).
func TestJobRunFollowsRollback(t *testing.T) {
	failed := deployment("failed", "Failed due to unhealthy allocations - rolling back to job version 0", 3, 0, 3)
	rollback := deployment("successful", "Deployment completed successfully", 3, 3, 0)
	rollback.ID, rollback.CreateIndex, rollback.JobVersion = deployID2, 12, 2
	routes := jobRunRoutes(deployID, failed)
	routes["GET /v1/job/example/deployment"] = []any{failed, rollback}
	routes["GET /v1/deployment/"+deployID2] = one(rollback)
	routes["GET /v1/deployment/allocations/"+deployID2] = one([]*api.AllocationListStub{})
	f := &seqFake{routes: routes}
	out, _, code := run(t, f.server(t), "job", "run", minimal)
	if code != 1 || !strings.Contains(out, `Monitoring the rollback: deployment "06ca68ff" of job version 2`) ||
		!strings.Contains(out, `Deployment "06ca68ff" successful`) {
		t.Fatalf("code %d\n%s", code, out)
	}
}

// A scheduler that does not record the deployment on the evaluation: the
// job's latest deployment is followed when it was made for this
// registration, and not when it is an older one.
func TestJobRunFindsDeploymentOfItsRegistration(t *testing.T) {
	routes := jobRunRoutes("", deployment("successful", "Deployment completed successfully", 3, 3, 0))
	routes["GET /v1/job/example/deployment"] = one(deployment("successful", "Deployment completed successfully", 3, 3, 0))
	f := &seqFake{routes: routes}
	out, _, code := run(t, f.server(t), "job", "run", minimal)
	if code != 0 || !strings.Contains(out, `Monitoring deployment "06ca68a2"`) {
		t.Fatalf("code %d\n%s", code, out)
	}
	older := deployment("failed", "Failed due to progress deadline", 3, 0, 3)
	older.JobSpecModifyIndex, older.JobModifyIndex = 3, 3
	routes["GET /v1/job/example/deployment"] = one(older)
	f = &seqFake{routes: routes}
	out, _, code = run(t, f.server(t), "job", "run", minimal)
	if code != 0 || strings.Contains(out, "Monitoring deployment") {
		t.Fatalf("older deployment followed: code %d\n%s", code, out)
	}
}

// Batch jobs have no deployment: `job run` ends after the evaluation and
// does not ask for one; -detach asks for nothing after registering.
func TestJobRunWithoutDeployment(t *testing.T) {
	routes := jobRunRoutes("")
	routes["GET /v1/evaluation/"+evalID] = one(&api.Evaluation{ID: evalID, JobID: "example", Type: "batch", Status: "complete", JobModifyIndex: 7})
	f := &seqFake{routes: routes}
	out, _, code := run(t, f.server(t), "job", "run", minimal)
	if code != 0 || strings.Contains(out, "deployment") || f.requested("GET /v1/job/example/deployment") != 0 || f.requested("GET /v1/deployment") != 0 {
		t.Fatalf("code %d seen %v\n%s", code, f.seen, out)
	}
	f = &seqFake{routes: jobRunRoutes(deployID, deployment("running", "Deployment is running", 0, 0, 0))}
	srv := f.server(t)
	if _, _, code := run(t, srv, "job", "run", "-detach", minimal); code != 0 || f.requested("GET ") != 0 {
		t.Fatalf("-detach: code %d seen %v", code, f.seen)
	}
}

// On a terminal the block is redrawn in place: each redraw moves the cursor
// up over exactly the lines drawn before (wrapped lines count as several)
// and clears them; the last draw carries the final status.
func TestDeploymentMonitorRedrawsInPlace(t *testing.T) {
	f := &seqFake{routes: jobRunRoutes(deployID,
		deployment("running", "Deployment is running", 1, 0, 0),
		deployment("running", "Deployment is running", 3, 1, 0),
		deployment("successful", "Deployment completed successfully", 3, 3, 0))}
	srv := f.server(t)
	cfg := api.DefaultConfig()
	cfg.Address = srv.URL
	client, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	const width = 40
	m := &deploymentMonitor{ui: &mcli.BasicUi{Writer: &buf, ErrorWriter: &buf}, out: &buf, client: client, tty: true,
		size: func() (int, int) { return width, 50 }, wait: time.Second, rollbackWait: time.Second}
	if code := m.follow(deployID); code != 0 {
		t.Fatalf("code %d\n%s", code, buf.String())
	}
	draws := strings.Split(buf.String(), "\r\x1b[")
	if len(draws) != 3 {
		t.Fatalf("want 3 draws (2 redraws), got %d:\n%q", len(draws), buf.String())
	}
	for i := 1; i < len(draws); i++ {
		prev := strings.TrimSuffix(draws[i-1], "\n")
		if i > 1 {
			prev = prev[strings.Index(prev, "\x1b[J")+3:]
		}
		want := fmt.Sprintf("%dA\x1b[J", screenLines(prev, width))
		if !strings.HasPrefix(draws[i], want) {
			t.Errorf("redraw %d starts %q, want %q (previous draw:\n%s)", i, draws[i][:12], want, prev)
		}
	}
	if !strings.Contains(draws[0], `Deployment "06ca68a2" in progress...`) || !strings.Contains(draws[2], `✓ Deployment "06ca68a2" successful`) ||
		!strings.Contains(draws[2], "Status      = successful") {
		t.Errorf("draws:\n%s", buf.String())
	}
	if n := screenLines(strings.Repeat("x", 81)+"\nshort", 40); n != 4 {
		t.Errorf("81 columns on a 40-column screen and a short line: %d lines, want 4", n)
	}
}

func TestDeploymentStatusMonitor(t *testing.T) {
	routes := jobRunRoutes(deployID,
		deployment("running", "Deployment is running", 1, 0, 0),
		deployment("failed", "Failed due to progress deadline", 1, 0, 0))
	routes["GET /v1/deployments"] = one([]*api.Deployment{deployment("running", "Deployment is running", 1, 0, 0)})
	f := &seqFake{routes: routes}
	srv := f.server(t)
	out, _, code := run(t, srv, "deployment", "status", "-monitor", "-wait", "1s", "06ca")
	if code != 1 || !strings.HasPrefix(out, `==> 2025-01-02T03:04:05Z: Monitoring deployment "06ca68a2"`) ||
		!strings.Contains(out, `Task Group "cache": Desired 3, Placed 1, Healthy 0, Unhealthy 0`) ||
		!strings.Contains(out, `==> 2025-01-02T03:04:05Z: Deployment "06ca68a2" failed`) {
		t.Fatalf("code %d\n%s", code, out)
	}
	if _, errb, code := run(t, srv, "deployment", "status", "-monitor", "-wait", "0s", "06ca"); code != 1 || !strings.Contains(errb, "Invalid -wait 0s") {
		t.Fatalf("-wait 0: code %d %q", code, errb)
	}
}

// job scale and deployment resume follow the deployment after their
// evaluation; deployment pause and job stop do not.
func TestScaleAndResumeFollowDeployment(t *testing.T) {
	routes := jobRunRoutes(deployID, deployment("successful", "Deployment completed successfully", 3, 3, 0))
	routes["GET /v1/job/example"] = one(sampleJob())
	routes["PUT /v1/job/example/scale"] = one(&api.JobRegisterResponse{EvalID: evalID})
	routes["GET /v1/deployments"] = one([]*api.Deployment{deployment("paused", "Deployment is paused", 1, 1, 0)})
	routes["PUT /v1/deployment/pause/"+deployID] = one(&api.DeploymentUpdateResponse{EvalID: evalID})
	routes["DELETE /v1/job/example"] = one(&api.JobDeregisterResponse{EvalID: evalID})
	f := &seqFake{routes: routes}
	srv := f.server(t)
	for _, args := range [][]string{{"job", "scale", "example", "3"}, {"deployment", "resume", "06ca"}} {
		out, errb, code := run(t, srv, args...)
		if code != 0 || !strings.Contains(out, `Monitoring deployment "06ca68a2"`) || !strings.Contains(out, `Deployment "06ca68a2" successful`) {
			t.Errorf("%v: code %d %s\n%s", args, code, errb, out)
		}
	}
	out, _, code := run(t, srv, "job", "stop", "-yes", "example")
	if code != 0 || strings.Contains(out, "Monitoring deployment") {
		t.Errorf("job stop: code %d\n%s", code, out)
	}
}

// An evaluation that does not carry its job modify index (a new job's
// registration) is matched through the register response's.
func TestJobRunMatchesDeploymentByRegisterResponse(t *testing.T) {
	routes := jobRunRoutes("", deployment("successful", "Deployment completed successfully", 3, 3, 0))
	routes["PUT /v1/jobs"] = one(&api.JobRegisterResponse{EvalID: evalID, JobModifyIndex: 7})
	routes["GET /v1/evaluation/"+evalID] = one(&api.Evaluation{ID: evalID, JobID: "example", Type: "service", Namespace: "default", Status: "complete"})
	routes["GET /v1/job/example/deployment"] = one(deployment("successful", "Deployment completed successfully", 3, 3, 0))
	f := &seqFake{routes: routes}
	out, _, code := run(t, f.server(t), "job", "run", minimal)
	if code != 0 || !strings.Contains(out, `Monitoring deployment "06ca68a2"`) {
		t.Fatalf("code %d\n%s", code, out)
	}
}

// An allocation the evaluation updated in place (created before it) is
// "modified", a new one "created", a stopped one not listed.
func TestEvalMonitorTellsModifiedFromCreated(t *testing.T) {
	routes := jobRunRoutes("")
	routes["GET /v1/evaluation/"+evalID] = one(&api.Evaluation{ID: evalID, JobID: "example", Type: "batch", Status: "complete", CreateIndex: 20})
	routes["GET /v1/evaluation/"+evalID+"/allocations"] = one([]*api.AllocationListStub{
		{ID: "aaaaaaaa-0000-4000-8000-000000000001", NodeID: nodeID, TaskGroup: "g", Name: "x.g[0]", CreateIndex: 5, DesiredStatus: "run"},
		{ID: "bbbbbbbb-0000-4000-8000-000000000002", NodeID: nodeID, TaskGroup: "g", Name: "x.g[1]", CreateIndex: 21, DesiredStatus: "run"},
		{ID: "cccccccc-0000-4000-8000-000000000003", NodeID: nodeID, TaskGroup: "g", Name: "x.g[2]", CreateIndex: 21, DesiredStatus: "stop"},
	})
	f := &seqFake{routes: routes}
	out, _, code := run(t, f.server(t), "job", "run", minimal)
	if code != 0 || !strings.Contains(out, `Allocation "aaaaaaaa" modified: node "171a583b", group "g"`) ||
		!strings.Contains(out, `Allocation "bbbbbbbb" created: node "171a583b", group "g"`) || strings.Contains(out, "cccccccc") {
		t.Fatalf("code %d\n%s", code, out)
	}
}

// A block taller than the terminal cannot be erased by moving the cursor
// up: the monitor appends lines instead of redrawing.
func TestDeploymentMonitorTooTallForScreenAppendsLines(t *testing.T) {
	f := &seqFake{routes: jobRunRoutes(deployID,
		deployment("running", "Deployment is running", 1, 0, 0),
		deployment("running", "Deployment is running", 3, 1, 0),
		deployment("successful", "Deployment completed successfully", 3, 3, 0))}
	srv := f.server(t)
	cfg := api.DefaultConfig()
	cfg.Address = srv.URL
	client, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	m := &deploymentMonitor{ui: &mcli.BasicUi{Writer: &buf, ErrorWriter: &buf}, out: &buf, client: client, tty: true,
		size: func() (int, int) { return 80, 8 }, wait: time.Second, rollbackWait: time.Second}
	if code := m.follow(deployID); code != 0 {
		t.Fatalf("code %d\n%s", code, buf.String())
	}
	out := buf.String()
	if strings.Contains(out, "\x1b[") || !strings.Contains(out, `Task Group "cache": Desired 3, Placed 1, Healthy 0, Unhealthy 0`) ||
		!strings.Contains(out, `Task Group "cache": Desired 3, Placed 3, Healthy 1, Unhealthy 0`) ||
		!strings.Contains(out, `Deployment "06ca68a2" successful`) {
		t.Fatalf("output:\n%q", out)
	}
}
