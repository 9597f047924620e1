package jobspec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/apiconv"
	"github.com/drover-project/drover/internal/fuzzseed"
)

// FuzzParse parses arbitrary jobspec source (HCL, or JSON when it starts
// with "{") with arbitrary variable-file content, as /v1/jobs/parse does.
// What must hold: no panic, and a job that parses converts to the server's
// types and encodes as JSON (the parse endpoint's answer) without panic.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.hcl")
	examples, _ := filepath.Glob("../../examples/*.hcl")
	jsonSpecs, _ := filepath.Glob("testdata/*.in.json")
	for _, p := range append(append(paths, examples...), jsonSpecs...) {
		src, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		vars := ""
		if strings.HasSuffix(p, "variables.hcl") {
			v, err := os.ReadFile("testdata/variables.varfile")
			if err != nil {
				f.Fatal(err)
			}
			vars = string(v) + "count = 4\n"
		}
		fuzzseed.Add(f, filepath.Base(p), string(src), vars)
	}
	fuzzseed.Add(f, "locals-dynamic", `
variable "ports" { default = ["http", "admin"] }
locals { name = upper("web") }
job "j" {
  group "g" {
    network {
      dynamic "port" {
        for_each = var.ports
        content { to = 8080 }
      }
    }
    task "t" {
      driver = "raw_exec"
      config { command = "${local.name}-${attr.kernel.name}" }
    }
  }
}`, `ports = ["a"]`)
	f.Fuzz(func(t *testing.T, src, vars string) {
		job, err := Parse("input.hcl", []byte(src), ParseConfig{VarContent: vars})
		if err != nil {
			return
		}
		if job == nil {
			t.Fatal("Parse returned neither a job nor an error")
		}
		if _, err := json.Marshal(job); err != nil {
			t.Fatalf("parsed job does not encode as JSON: %v", err)
		}
		job.Canonicalize()
		_ = apiconv.ApiJobToStructJob(job)
	})
}
