package cli

import (
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// A job found by prefix (or with -namespace='*') may live in another
// namespace than the CLI's: every call about it after the lookup names the
// job's own namespace, or job status would show another namespace's (or
// no) summary, evaluations, allocations and deployment, and job stop would
// stop nothing.
func TestJobVerbsUseResolvedJobNamespace(t *testing.T) {
	job := sampleJob()
	job.Namespace = ptr("team-a")
	routes := map[string]any{
		"GET /v1/jobs":        []*api.JobListStub{{ID: "example", Namespace: "team-a", Type: "service", Status: "running"}},
		"GET /v1/job/example": job,
		"GET /v1/job/example/summary": &api.JobSummary{JobID: "example", Namespace: "team-a",
			Summary: map[string]api.TaskGroupSummary{"cache": {Running: 1}}},
		"GET /v1/job/example/evaluations":    []*api.Evaluation{},
		"GET /v1/job/example/allocations":    []*api.AllocationListStub{},
		"GET /v1/job/example/deployment":     nil,
		"GET /v1/job/example/deployments":    []*api.Deployment{},
		"GET /v1/job/example/versions":       &api.JobVersionsResponse{Versions: []*api.Job{job}},
		"DELETE /v1/job/example":             &api.JobDeregisterResponse{},
		"PUT /v1/job/example/revert":         &api.JobRegisterResponse{},
		"PUT /v1/job/example/scale":          &api.JobRegisterResponse{},
		"PUT /v1/job/example/periodic/force": map[string]string{"EvalID": ""},
	}
	job.Periodic = &api.PeriodicConfig{Enabled: ptr(true), Spec: ptr("@daily")}
	for _, args := range [][]string{
		{"job", "status", "-namespace=*", "exa"},
		{"job", "status", "exa"},
		{"job", "history", "-namespace=*", "exa"},
		{"job", "deployments", "-namespace=*", "exa"},
		{"job", "deployments", "-latest", "exa"},
		{"job", "inspect", "-version=0", "exa"},
		{"job", "stop", "-yes", "-detach", "exa"},
		{"job", "revert", "exa", "0"},
		{"job", "scale", "exa", "2"},
		{"job", "periodic", "force", "-detach", "exa"},
	} {
		f := &fake{routes: routes}
		out, errb, code := run(t, f.server(t), args...)
		if code != 0 {
			t.Errorf("%v: code %d: %s%s", args, code, out, errb)
			continue
		}
		followUps := 0
		for _, req := range f.seen {
			if !strings.Contains(req, " /v1/job/example") {
				continue
			}
			followUps++
			if !strings.Contains(req, "namespace=team-a") {
				t.Errorf("%v: %s is not in the job's namespace team-a", args, req)
			}
		}
		if followUps == 0 {
			t.Errorf("%v: no request about the job: %v", args, f.seen)
		}
	}
}
