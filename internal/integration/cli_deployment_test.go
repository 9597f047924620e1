package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// noDeployJob is a service job whose group has no rolling-update strategy
// (max_parallel 0): it never gets a deployment.
const noDeployJob = `job "nodeploy" {
  datacenters = ["*"]

  group "g" {
    update {
      max_parallel = 0
    }

    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "exec sleep 600"]
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
  }
}
`

// The deployment verbs against a dev agent, where there is nothing to act
// on: every one answers clearly and exits non-zero on what does not exist,
// and `job run` of a job without a deployment ends after its evaluation.
func TestDeploymentCLIWithoutDeploymentsOnDevAgent(t *testing.T) {
	a := devAgent(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nodeploy.nomad.hcl"), []byte(noDeployJob), 0o644); err != nil {
		t.Fatal(err)
	}

	if out, code := a.cli(dir, "deployment", "list"); code != 0 || strings.TrimSpace(out) != "No deployments found" {
		t.Fatalf("deployment list (%d):\n%s", code, out)
	}
	for _, verb := range []string{"status", "promote", "fail", "pause", "resume", "unblock"} {
		out, code := a.cli(dir, "deployment", verb, "0badc0de")
		if code != 1 || !strings.Contains(out, `No deployment(s) with prefix or ID "0badc0de" found`) {
			t.Errorf("deployment %s of an unknown ID (%d):\n%s", verb, code, out)
		}
	}

	out, code := a.cli(dir, "job", "run", "nodeploy.nomad.hcl")
	if code != 0 || !strings.Contains(out, `finished with status "complete"`) || strings.Contains(out, "Monitoring deployment") {
		t.Fatalf("job run without a deployment (%d):\n%s", code, out)
	}
	if out, code := a.cli(dir, "job", "deployments", "nodeploy"); code != 0 || strings.TrimSpace(out) != "No deployments found" {
		t.Fatalf("job deployments (%d):\n%s", code, out)
	}
	if out, code := a.cli(dir, "job", "deployments", "-latest", "nodeploy"); code != 0 || strings.TrimSpace(out) != `Job "nodeploy" has no deployment` {
		t.Fatalf("job deployments -latest (%d):\n%s", code, out)
	}
	if out, code := a.cli(dir, "job", "promote", "nodeploy"); code != 1 || !strings.Contains(out, `Job "nodeploy" has no deployment to promote`) {
		t.Fatalf("job promote (%d):\n%s", code, out)
	}
	if out, code := a.cli(dir, "job", "promote", "nosuchjob"); code != 1 || !strings.Contains(out, `No job(s) with prefix or ID "nosuchjob" found`) {
		t.Fatalf("job promote of an unknown job (%d):\n%s", code, out)
	}
	if out, code := a.cli(dir, "job", "status", "nodeploy"); code != 0 || strings.Contains(out, "Latest Deployment") {
		t.Fatalf("job status (%d):\n%s", code, out)
	}
}
