package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
	"github.com/drover-project/drover/internal/structs/unsupported"
)

// deprecatedSpec uses max_client_disconnect, which the parser accepts with a
// warning (it becomes disconnect { lost_after }).
const deprecatedSpec = `job "hello" {
  group "g" {
    max_client_disconnect = "1h"
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
`

func TestJobWarningsBlock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "hello.hcl")
	if err := os.WriteFile(p, []byte(deprecatedSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	resp := planResponse(1)
	resp.Warnings = "1 warning occurred:\n\n\t* Group \"g\" has warnings: update stanza is ignored\n\n"
	f := &fake{routes: map[string]any{
		"PUT /v1/job/hello/plan": resp,
		"PUT /v1/jobs":           &api.JobRegisterResponse{EvalID: evalID},
		"PUT /v1/validate/job":   &api.JobValidateResponse{},
	}}
	out, errb, code := run(t, f.server(t), "job", "plan", p)
	if code != 1 {
		t.Fatalf("plan code %d: %s", code, errb)
	}
	golden(t, "job_plan_warnings.txt", strings.ReplaceAll(out, p, "hello.hcl"))

	// run and validate print the parse warnings in the same block.
	want := "Job Warnings:\n1 warning while parsing the jobspec:\n\n\t* group \"g\": max_client_disconnect is deprecated; use disconnect { lost_after = \"1h0m0s\" }\n"
	for _, args := range [][]string{{"job", "run", "-detach", p}, {"job", "validate", p}} {
		out, errb, code := run(t, f.server(t), args...)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("%v: code %d\nout:\n%s\nerr:\n%s\nwant block:\n%s", args, code, out, errb, want)
		}
	}
	// Without warnings, no block.
	out, _, _ = run(t, f.server(t), "job", "validate", minimal)
	if strings.Contains(out, "Job Warnings") {
		t.Errorf("validate of a clean spec printed a warnings block:\n%s", out)
	}
}

// What the server answers for a job using blocks Drover does not act on
// (unsupported.Gaps formats it): `job run`, `job plan` and `job validate` print
// it under "Job Warnings:" as Nomad's CLI does; refusals come back from
// validate as validation errors and fail it.
func TestServerWarningsPrinted(t *testing.T) {
	warnings := unsupported.Gaps{Warnings: []string{
		`Task group "web": service "api" is accepted but not acted on by Drover yet: Drover has no Consul integration, so it is not registered in Consul (provider "consul"), and its checks do not run`,
		`Task group "web", task "server": identity "aws" change_mode is accepted but not acted on by Drover yet: a renewed token is rewritten in place`,
	}}.WarningsText()
	plan := planResponse(1)
	plan.Warnings = warnings
	f := &fake{routes: map[string]any{
		"PUT /v1/jobs":           &api.JobRegisterResponse{EvalID: evalID, Warnings: warnings},
		"PUT /v1/job/hello/plan": plan,
		"PUT /v1/validate/job":   &api.JobValidateResponse{Warnings: warnings},
	}}
	for _, tc := range []struct {
		args   []string
		code   int
		golden string
	}{
		{[]string{"job", "run", "-detach", minimal}, 0, "job_run_server_warnings.txt"},
		{[]string{"job", "plan", minimal}, 1, "job_plan_server_warnings.txt"},
		{[]string{"job", "validate", minimal}, 0, "job_validate_server_warnings.txt"},
	} {
		out, errb, code := run(t, f.server(t), tc.args...)
		if code != tc.code {
			t.Fatalf("%v: code %d, want %d: %s", tc.args, code, tc.code, errb)
		}
		golden(t, tc.golden, strings.ReplaceAll(out, minimal, "hello.hcl"))
	}

	refused := []string{`Task group "web", task "server": template "local/app.conf" is not supported by Drover yet: the task would start without the files it renders`}
	f = &fake{routes: map[string]any{"PUT /v1/validate/job": &api.JobValidateResponse{
		ValidationErrors: refused, Error: (&structs.ValidationError{Errors: refused}).Error(), Warnings: warnings}}}
	out, errb, code := run(t, f.server(t), "job", "validate", minimal)
	if code != 1 {
		t.Fatalf("validate of a refused job: code %d, want 1", code)
	}
	golden(t, "job_validate_refused.txt", out+"--- stderr ---\n"+errb)
}
