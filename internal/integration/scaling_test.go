package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const scaledJobHCL = `job "auto" {
  datacenters = ["*"]

  group "g" {
    count = COUNT

    # No deployment (max_parallel 0): the API scales the job right after it
    # is registered, which an active deployment would refuse.
    update {
      max_parallel = 0
    }

    scaling {
      min = 1
      max = 3
      policy {
        cooldown = "1m"
        check "cpu" {
          source = "nomad-apm"
          query  = "avg_cpu"
        }
      }
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

// What an autoscaler sees and does, end to end: the job's scaling block is a
// policy it can list and read; it records a failed evaluation as an event
// without changing the count; the operator reads both from the CLI.
func TestScalingPoliciesAndEventsOnDevAgent(t *testing.T) {
	a := devAgent(t)
	dir := t.TempDir()
	write := func(count string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "auto.nomad.hcl"), []byte(strings.Replace(scaledJobHCL, "COUNT", count, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A count outside [min, max] is refused at register.
	write("5")
	if out, code := a.cli(dir, "job", "run", "-detach", "auto.nomad.hcl"); code == 0 ||
		!strings.Contains(out, "task group count must not be greater than maximum count in scaling policy (5 > 3)") {
		t.Fatalf("count above max (%d):\n%s", code, out)
	}

	write("2")
	out, code := a.cli(dir, "job", "run", "-detach", "auto.nomad.hcl")
	if code != 0 || strings.Contains(out, "scaling") {
		t.Fatalf("job run (%d):\n%s", code, out)
	}
	out, code = a.cli(dir, "scaling", "policy", "list")
	m := regexp.MustCompile(`(?m)^([0-9a-f-]{36})\s+true\s+horizontal\s+Namespace:default,Job:auto,Group:g$`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("policy list (%d):\n%s", code, out)
	}
	id := m[1]
	out, code = a.cli(dir, "scaling", "policy", "info", id[:8])
	if code != 0 || !strings.Contains(out, "Min     = 1") || !strings.Contains(out, "Max     = 3") || !strings.Contains(out, `"cooldown": "1m"`) ||
		!strings.Contains(out, `"query": "avg_cpu"`) {
		t.Fatalf("policy info (%d):\n%s", code, out)
	}
	if out, _ := a.cli(dir, "scaling", "policy", "list", "-type", "vertical"); strings.TrimSpace(out) != "No policies found" {
		t.Fatalf("type=vertical:\n%s", out)
	}

	// The autoscaler's error report: an event, no new version.
	jobs := a.client.Jobs()
	if _, _, err := jobs.Scale("auto", "g", nil, "metric source unreachable", true, map[string]any{"source": "nomad-apm"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := jobs.Scale("auto", "g", ptr(3), "cpu above target", false, nil, nil); err != nil {
		t.Fatal(err)
	}
	job, _, err := jobs.Info("auto", nil)
	if err != nil || *job.Version != 1 || *job.TaskGroups[0].Count != 3 {
		t.Fatalf("after scaling: %v version %d", err, *job.Version)
	}
	out, code = a.cli(dir, "job", "scaling-events", "-verbose", "auto")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !regexp.MustCompile(`^g\s+3\s+2\s+false\s+cpu above target\s+[0-9a-f-]{36}\s+\S+$`).MatchString(lines[1]) ||
		!regexp.MustCompile(`^g\s+2\s+true\s+metric source unreachable\s+\S+$`).MatchString(lines[2]) {
		t.Fatalf("scaling-events (%d):\n%s", code, out)
	}

	// The new version kept the policy's ID; stopping the job withdraws it.
	if out, _ := a.cli(dir, "scaling", "policy", "list", "-job", "auto"); !strings.Contains(out, id) {
		t.Fatalf("ID changed across versions (%s):\n%s", id, out)
	}
	if out, code := a.cli(dir, "job", "stop", "-detach", "auto"); code != 0 {
		t.Fatalf("stop (%d):\n%s", code, out)
	}
	if out, _ := a.cli(dir, "scaling", "policy", "list"); strings.TrimSpace(out) != "No policies found" {
		t.Fatalf("stopped job's policies:\n%s", out)
	}
}
