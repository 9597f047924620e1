package httpapi

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// The deployment actions through the official client: each reaches its RPC
// with the path's deployment and the body's fields, and answers the
// DeploymentUpdateResponse with the write's index.
func TestDeploymentActions(t *testing.T) {
	env := newEnv(t, nil)
	ver := uint64(3)
	upd := structs.DeploymentUpdateResponse{EvalID: "e1", EvalCreateIndex: 40, DeploymentModifyIndex: 40, RevertedJobVersion: &ver,
		WriteMeta: structs.WriteMeta{Index: 40}}
	for _, m := range []string{"Deployment.Fail", "Deployment.Pause", "Deployment.Promote", "Deployment.SetAllocHealth", "Deployment.Unblock"} {
		env.rpc.reply(m, upd)
	}
	d := env.client.Deployments()

	resp, wm, err := d.Fail("d1", nil)
	if err != nil || resp.EvalID != "e1" || resp.DeploymentModifyIndex != 40 || resp.RevertedJobVersion == nil || *resp.RevertedJobVersion != 3 || wm.LastIndex != 40 {
		t.Fatalf("fail: %+v %+v %v", resp, wm, err)
	}
	if a := env.rpc.last(t, "Deployment.Fail").(*structs.DeploymentFailRequest); a.DeploymentID != "d1" {
		t.Fatalf("fail args %+v", a)
	}
	if _, _, err := d.Pause("d1", true, nil); err != nil {
		t.Fatal(err)
	}
	if a := env.rpc.last(t, "Deployment.Pause").(*structs.DeploymentPauseRequest); a.DeploymentID != "d1" || !a.Pause {
		t.Fatalf("pause args %+v", a)
	}
	if _, _, err := d.Pause("d1", false, nil); err != nil {
		t.Fatal(err)
	}
	if a := env.rpc.last(t, "Deployment.Pause").(*structs.DeploymentPauseRequest); a.Pause {
		t.Fatalf("resume args %+v", a)
	}
	if _, _, err := d.PromoteAll("d1", nil); err != nil {
		t.Fatal(err)
	}
	if a := env.rpc.last(t, "Deployment.Promote").(*structs.DeploymentPromoteRequest); !a.All || a.DeploymentID != "d1" {
		t.Fatalf("promote all args %+v", a)
	}
	if _, _, err := d.PromoteGroups("d1", []string{"web", "api"}, nil); err != nil {
		t.Fatal(err)
	}
	if a := env.rpc.last(t, "Deployment.Promote").(*structs.DeploymentPromoteRequest); a.All || strings.Join(a.Groups, ",") != "web,api" {
		t.Fatalf("promote groups args %+v", a)
	}
	if _, _, err := d.SetAllocHealth("d1", []string{"a1"}, []string{"a2"}, nil); err != nil {
		t.Fatal(err)
	}
	if a := env.rpc.last(t, "Deployment.SetAllocHealth").(*structs.DeploymentAllocHealthRequest); a.HealthyAllocationIDs[0] != "a1" || a.UnhealthyAllocationIDs[0] != "a2" {
		t.Fatalf("health args %+v", a)
	}
	if _, _, err := d.Unblock("d1", nil); err != nil {
		t.Fatal(err)
	}

	// Errors from the server keep their status.
	env.rpc.fail("Deployment.Unblock", structs.NewErrCoded(400, `deployment "d1" is not multiregion`))
	_, _, err = d.Unblock("d1", nil)
	wantStatus(t, err, 400, "is not multiregion")
	env.rpc.fail("Deployment.Fail", structs.NewErrCoded(404, `deployment "nope" not found`))
	_, _, err = d.Fail("nope", nil)
	wantStatus(t, err, 404, "not found")
}

// Bad requests are refused before any RPC, naming what is wrong.
func TestDeploymentActionsBadRequests(t *testing.T) {
	env := newEnv(t, nil)
	cases := []struct {
		method, path, body string
		code               int
		part               string
	}{
		{"PUT", "/v1/deployment/pause/d1", `{}`, 400, "Missing Pause"},
		{"PUT", "/v1/deployment/pause/d1", ``, 400, "Request body is empty"},
		{"PUT", "/v1/deployment/pause/d1", `{"Pause":"yes"}`, 400, "Pause"},
		{"PUT", "/v1/deployment/promote/d1", `{"Groups":"web"}`, 400, "Groups"},
		{"PUT", "/v1/deployment/promote/d1", `{"DeploymentID":"d2","All":true}`, 400, "Deployment ID does not match"},
		{"PUT", "/v1/deployment/allocation-health/d1", `{"HealthyAllocationIDs":"a1"}`, 400, "HealthyAllocationIDs"},
		{"PUT", "/v1/deployment/fail/", ``, 400, "Missing deployment ID"},
		{"GET", "/v1/deployment/fail/d1", ``, 405, ""},
		{"PUT", "/v1/deployment/rollback/d1", ``, 404, ""},
	}
	for _, c := range cases {
		code, _, body := env.raw(t, c.method, c.path, c.body)
		if code != c.code || !strings.Contains(body, c.part) {
			t.Errorf("%s %s %s: %d %q, want %d containing %q", c.method, c.path, c.body, code, body, c.code, c.part)
		}
	}
	env.rpc.mu.Lock()
	defer env.rpc.mu.Unlock()
	if len(env.rpc.calls) != 0 {
		t.Fatalf("bad requests reached the server: %v", env.rpc.calls)
	}
}

// /v1/job/<id>/promote promotes the job's latest deployment.
func TestJobPromote(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Job.LatestDeployment", structs.SingleDeploymentResponse{Deployment: &structs.Deployment{ID: "d7", JobID: "web"}})
	env.rpc.reply("Deployment.Promote", structs.DeploymentUpdateResponse{EvalID: "e9", WriteMeta: structs.WriteMeta{Index: 50}})
	code, hdr, body := env.raw(t, "PUT", "/v1/job/web/promote?namespace=prod", `{"Groups":["web"]}`)
	if code != 200 || !strings.Contains(body, `"EvalID":"e9"`) || hdr.Get("X-Nomad-Index") != "50" {
		t.Fatalf("promote: %d %q %v", code, body, hdr)
	}
	if q := env.rpc.last(t, "Job.LatestDeployment").(*structs.JobSpecificRequest); q.JobID != "web" || q.Namespace != "prod" {
		t.Fatalf("latest deployment args %+v", q)
	}
	if a := env.rpc.last(t, "Deployment.Promote").(*structs.DeploymentPromoteRequest); a.DeploymentID != "d7" || a.All || a.Groups[0] != "web" {
		t.Fatalf("promote args %+v", a)
	}
	env.rpc.reply("Job.LatestDeployment", structs.SingleDeploymentResponse{})
	if code, _, body := env.raw(t, "PUT", "/v1/job/web/promote", `{"All":true}`); code != 404 || !strings.Contains(body, "has no deployment") {
		t.Fatalf("no deployment: %d %q", code, body)
	}
}
