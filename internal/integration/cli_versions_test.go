package integration

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// cli runs the built binary against agent a in dir and returns its combined
// output and exit code.
func (a *agent) cli(dir string, args ...string) (string, int) {
	a.t.Helper()
	cmd := exec.Command(droverBin, args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "NOMAD_ADDR="+a.url(""))
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		a.t.Fatalf("%v: %v", args, err)
	}
	return string(out), code
}

// The newcomer path: `job init && job run example.nomad.hcl` on a fresh dev
// agent runs the example and says so; then the version commands on it.
func TestJobInitRunsOnDevAgent(t *testing.T) {
	a := devAgent(t)
	dir := t.TempDir()
	out, code := a.cli(dir, "job", "init")
	if code != 0 || !strings.Contains(out, "Example job file written to example.nomad.hcl") || !strings.Contains(out, "job run example.nomad.hcl") {
		t.Fatalf("job init (%d):\n%s", code, out)
	}
	if out, code := a.cli(dir, "job", "init"); code == 0 || !strings.Contains(out, "already exists") {
		t.Fatalf("second init overwrote (%d):\n%s", code, out)
	}
	out, code = a.cli(dir, "job", "run", "example.nomad.hcl")
	if code != 0 || !regexp.MustCompile(`Allocation "[0-9a-f]{8}" created: node "[0-9a-f]{8}", group "app"`).MatchString(out) ||
		!strings.Contains(out, `finished with status "complete"`) {
		t.Fatalf("job run (%d):\n%s", code, out)
	}
	var allocID string
	waitFor(t, 20*time.Second, "example running", func() bool {
		for _, s := range a.allocsOf("example") {
			if s.ClientStatus == "running" {
				allocID = s.ID
				return true
			}
		}
		return false
	})
	waitFor(t, 20*time.Second, "the task's output", func() bool {
		out, _ := a.cli(dir, "alloc", "fs", allocID[:8], "alloc/logs/hello.stdout.0")
		return strings.Contains(out, "hello from example.app[0]")
	})
	if out, code := a.cli(dir, "alloc", "fs", allocID, "alloc/logs"); code != 0 || !strings.Contains(out, "hello.stdout.0") {
		t.Fatalf("alloc fs ls (%d):\n%s", code, out)
	}

	// Scale and revert do not wait for their deployments (min_healthy_time
	// is 10s by default): the version commands are what this part checks.
	if out, code := a.cli(dir, "job", "scale", "-detach", "example", "2"); code != 0 || !strings.Contains(out, "Evaluation ID: ") {
		t.Fatalf("job scale (%d):\n%s", code, out)
	}
	out, code = a.cli(dir, "job", "history", "-p", "example")
	if code != 0 || !strings.Contains(out, "Version     = 1") || !strings.Contains(out, `Count: "1" => "2"`) {
		t.Fatalf("job history -p (%d):\n%s", code, out)
	}
	if out, code := a.cli(dir, "job", "revert", "-detach", "example", "0"); code != 0 || !strings.Contains(out, "Evaluation ID: ") {
		t.Fatalf("job revert (%d):\n%s", code, out)
	}
	if out, code := a.cli(dir, "job", "revert", "example", "2"); code == 0 || !strings.Contains(out, "can't revert to current version") {
		t.Fatalf("revert to current (%d):\n%s", code, out)
	}
	out, code = a.cli(dir, "eval", "list", "-job", "example")
	if code != 0 || strings.Count(out, "example") < 3 || !strings.Contains(out, "Placement Failures") {
		t.Fatalf("eval list (%d):\n%s", code, out)
	}
	evalID := strings.Fields(strings.Split(out, "\n")[1])[0]
	if out, code := a.cli(dir, "eval", "status", evalID); code != 0 || !strings.Contains(out, "Job ID             = example") {
		t.Fatalf("eval status (%d):\n%s", code, out)
	}
	if out, code := a.cli(dir, "agent-info"); code != 0 || !strings.Contains(out, "client") {
		t.Fatalf("agent-info (%d):\n%s", code, out)
	}
	live := a.allocsOf("example")
	for _, s := range live {
		if s.DesiredStatus == "run" && s.ClientStatus == "running" {
			if out, code := a.cli(dir, "alloc", "stop", s.ID); code != 0 || !strings.Contains(out, `finished with status "complete"`) {
				t.Fatalf("alloc stop (%d):\n%s", code, out)
			}
			break
		}
	}
}
