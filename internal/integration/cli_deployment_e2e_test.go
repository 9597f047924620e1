package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// deployJob is a service job whose updates roll out one allocation at a
// time, each healthy after 3s (an update runs for at least 6 s: the test
// pauses it while it runs, after finding it with a CLI call or more);
// SCRIPT is its command.
const deployJob = `job "rollout" {
  datacenters = ["*"]

  group "g" {
    count = 2

    update {
      max_parallel      = 1
      min_healthy_time  = "3s"
      auto_revert       = true
      progress_deadline = "0s"
    }

    restart {
      attempts = 0
      mode     = "fail"
    }

    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "SCRIPT"]
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
  }
}
`

// The deployment verbs as an operator uses them on a dev agent: job run
// follows the deployment to success; deployment status -monitor, pause and
// resume on an update; a version whose task exits at once fails and rolls
// back, job run following the rollback and exiting 1.
func TestDeploymentCLIOnDevAgent(t *testing.T) {
	a := devAgent(t)
	dir := t.TempDir()
	write := func(script string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "rollout.nomad.hcl"), []byte(strings.Replace(deployJob, "SCRIPT", script, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	success := regexp.MustCompile(`Deployment "[0-9a-f]{8}" successful`)

	write("exec sleep 600")
	out, code := a.cli(dir, "job", "run", "rollout.nomad.hcl")
	if code != 0 || !strings.Contains(out, "Monitoring deployment") || !success.MatchString(out) ||
		!regexp.MustCompile(`(?m)^    g +true +2 +2 +2 +0$`).MatchString(out) {
		t.Fatalf("job run (%d):\n%s", code, out)
	}

	latest := func() string {
		t.Helper()
		out, code := a.cli(dir, "job", "deployments", "-t", "{{(index . 0).ID}}", "rollout")
		if code != 0 || len(strings.TrimSpace(out)) != 36 {
			t.Fatalf("job deployments -t (%d): %q", code, out)
		}
		return strings.TrimSpace(out)
	}
	first := latest()

	// An update, paused and resumed; resume follows it to the end.
	write("exec sleep 601")
	if out, code := a.cli(dir, "job", "run", "-detach", "rollout.nomad.hcl"); code != 0 || !strings.Contains(out, "Evaluation ID: ") {
		t.Fatalf("job run -detach (%d):\n%s", code, out)
	}
	// -detach returns once the evaluation is created; the scheduler makes
	// the deployment after that.
	var second string
	waitFor(t, 30*time.Second, "the update's deployment", func() bool {
		second = latest()
		return second != first
	})
	if out, code := a.cli(dir, "deployment", "pause", second[:8]); code != 0 || strings.TrimSpace(out) != `Deployment "`+second[:8]+`" paused` {
		t.Fatalf("pause (%d):\n%s", code, out)
	}
	if out, code := a.cli(dir, "deployment", "status", second[:8]); code != 0 || !strings.Contains(out, "Status      = paused") {
		t.Fatalf("status of the paused deployment (%d):\n%s", code, out)
	}
	out, code = a.cli(dir, "deployment", "resume", second[:8])
	if code != 0 || !strings.Contains(out, `Deployment "`+second[:8]+`" resumed`) || !strings.Contains(out, `Deployment "`+second[:8]+`" successful`) {
		t.Fatalf("resume (%d):\n%s", code, out)
	}
	if out, code := a.cli(dir, "deployment", "status", "-monitor", second); code != 0 || !strings.Contains(out, `Deployment "`+second[:8]+`" successful`) {
		t.Fatalf("status -monitor of a finished deployment (%d):\n%s", code, out)
	}
	if out, code := a.cli(dir, "deployment", "pause", second[:8]); code != 1 || !strings.Contains(out, `has already ended (status "successful")`) {
		t.Fatalf("pause of a finished deployment (%d):\n%s", code, out)
	}
	out, code = a.cli(dir, "job", "status", "rollout")
	if code != 0 || !strings.Contains(out, "Latest Deployment\nID          = "+second[:8]) || !strings.Contains(out, "Status      = successful") {
		t.Fatalf("job status (%d):\n%s", code, out)
	}

	// A version whose task exits at once fails its deployment; the job
	// rolls back to the last stable version, which job run follows.
	write("exit 1")
	out, code = a.cli(dir, "job", "run", "rollout.nomad.hcl")
	if code != 1 || !strings.Contains(out, "Failed due to unhealthy allocations - rolling back to job version") ||
		!strings.Contains(out, "Monitoring the rollback") || !success.MatchString(out) {
		t.Fatalf("job run of a failing version (%d):\n%s", code, out)
	}
	out, code = a.cli(dir, "deployment", "list")
	if code != 0 || strings.Count(out, "rollout") != 4 || !strings.Contains(out, "failed") {
		t.Fatalf("deployment list (%d):\n%s", code, out)
	}
}
