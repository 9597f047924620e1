package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
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
