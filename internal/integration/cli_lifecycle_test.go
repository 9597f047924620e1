package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cliJob is a service job: `job run` follows its deployment to the end, so
// a short min_healthy_time keeps the run quick (the default is 10s).
const cliJob = `job "greeter" {
  datacenters = ["*"]

  group "g" {
    update {
      min_healthy_time = "1s"
    }

    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo greetings from ${NOMAD_JOB_NAME}; exec sleep 600"]
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
  }
}
`

// The CLI as an operator uses it against a dev agent: run, status, logs,
// plan exit codes, stop -purge, and validate errors that name file and line.
func TestCLILifecycleOnDevAgent(t *testing.T) {
	a := devAgent(t)
	dir := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "greeter.nomad.hcl"), []byte(cliJob), 0o644))

	// Plan before the job exists: allocations would be created -> exit 1.
	if out, code := a.cli(dir, "job", "plan", "greeter.nomad.hcl"); code != 1 || !strings.Contains(out, "+ Job: \"greeter\"") {
		t.Fatalf("plan of a new job: exit %d\n%s", code, out)
	}
	out, code := a.cli(dir, "job", "run", "greeter.nomad.hcl")
	if code != 0 || !strings.Contains(out, `finished with status "complete"`) {
		t.Fatalf("job run: exit %d\n%s", code, out)
	}
	waitFor(t, 20*time.Second, "status shows the alloc running", func() bool {
		out, code := a.cli(dir, "job", "status", "greeter")
		return code == 0 && strings.Contains(out, "running") && strings.Contains(out, "Allocations")
	})
	stubs := a.allocsOf("greeter")
	if len(stubs) != 1 {
		t.Fatalf("want 1 alloc, got %d", len(stubs))
	}
	waitFor(t, 20*time.Second, "logs show the task's output", func() bool {
		out, code := a.cli(dir, "alloc", "logs", stubs[0].ID[:8])
		return code == 0 && strings.Contains(out, "greetings from greeter")
	})
	// Plan of the unchanged job: nothing created or destroyed -> exit 0.
	if out, code := a.cli(dir, "job", "plan", "greeter.nomad.hcl"); code != 0 {
		t.Fatalf("plan of an unchanged job: exit %d\n%s", code, out)
	}
	if out, code := a.cli(dir, "job", "stop", "-purge", "greeter"); code != 0 {
		t.Fatalf("job stop -purge: exit %d\n%s", code, out)
	}
	if out, code := a.cli(dir, "job", "status", "greeter"); code == 0 {
		t.Fatalf("purged job still has a status:\n%s", out)
	}

	// A broken file: validate exits non-zero and names file and line.
	broken := strings.Replace(cliJob, `driver = "raw_exec"`, `driver = "raw_exec"
      bogus  = true`, 1)
	must(os.WriteFile(filepath.Join(dir, "broken.nomad.hcl"), []byte(broken), 0o644))
	out, code = a.cli(dir, "job", "validate", "broken.nomad.hcl")
	if code == 0 || !strings.Contains(out, "broken.nomad.hcl:11") || !strings.Contains(out, "bogus") {
		t.Fatalf("validate of a broken file: exit %d\n%s", code, out)
	}
	// Plan of a broken file is an error -> 255.
	if _, code := a.cli(dir, "job", "plan", "broken.nomad.hcl"); code != 255 {
		t.Fatalf("plan of a broken file: exit %d, want 255", code)
	}
}
