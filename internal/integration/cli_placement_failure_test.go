package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// stuckJob has a group no node satisfies, a group larger than the node and
// a group that fits.
const stuckJob = `job "stuck" {
  datacenters = ["*"]

  group "win" {
    count = 2
    constraint {
      attribute = "${attr.kernel.name}"
      value     = "windows"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
    }
  }

  group "huge" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      resources {
        memory = 1000000
      }
    }
  }

  group "ok" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
  }
}
`

// A job that cannot place: `job status` says which groups wait, how many
// allocations and why, `-evals` shows the blocked evaluation, `eval status`
// on it prints the same reasons; once the job no longer asks for them
// (a new version without those groups; a stop) the section is gone.
func TestJobStatusShowsPlacementFailure(t *testing.T) {
	a := devAgent(t)
	dir := t.TempDir()
	// submit runs src as the job's next version without following it.
	submit := func(src string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "stuck.nomad.hcl"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, code := a.cli(dir, "job", "run", "-detach", "stuck.nomad.hcl"); code != 0 {
			t.Fatalf("job run -detach (%d):\n%s", code, out)
		}
	}
	submit(stuckJob)
	wantBlock := []string{
		"\nPlacement Failure\n",
		`Task Group "huge" (failed to place 1 allocation):` + "\n  * Resources exhausted on 1 nodes\n  * Dimension \"memory\" exhausted on 1 nodes\n",
		`Task Group "win" (failed to place 2 allocations):` + "\n  * Constraint \"${attr.kernel.name} = windows\": 1 nodes excluded by filter\n",
	}
	var out string
	var code int
	waitFor(t, 20*time.Second, "job status to show the placement failure", func() bool {
		out, code = a.cli(dir, "job", "status", "stuck")
		return code == 0 && strings.Contains(out, "\nPlacement Failure\n")
	})
	for _, w := range wantBlock {
		if !strings.Contains(out, w) {
			t.Errorf("job status lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, `Task Group "ok"`) {
		t.Errorf("the group that fits is named a failure:\n%s", out)
	}
	if pf, al := strings.Index(out, "\nPlacement Failure\n"), strings.Index(out, "\nAllocations\n"); pf < 0 || al < pf {
		t.Errorf("Placement Failure is not before Allocations:\n%s", out)
	}

	out, code = a.cli(dir, "job", "status", "-evals", "stuck")
	blocked := regexp.MustCompile(`(?m)^([0-9a-f]{8})\s+50\s+queued-allocs\s+blocked\s+N/A - In Progress$`).FindStringSubmatch(out)
	if code != 0 || blocked == nil || !regexp.MustCompile(`(?m)^[0-9a-f]{8}\s+50\s+job-register\s+complete\s+true$`).MatchString(out) {
		t.Fatalf("job status -evals (%d) lacks the blocked and the registering evaluations:\n%s", code, out)
	}
	_, block, _ := strings.Cut(out, "\nPlacement Failure\n")
	block, _, _ = strings.Cut(block, "\n\n")
	evalOut, code := a.cli(dir, "eval", "status", blocked[1])
	if code != 0 || !strings.Contains(evalOut, "\n==> Failed Placements\n"+block+"\n") {
		t.Fatalf("eval status %s (%d) does not print job status's block:\n%s\nblock:\n%s", blocked[1], code, evalOut, block)
	}

	// A version that only asks for what fits: nothing waits any more.
	fits := stuckJob[:strings.Index(stuckJob, `  group "win"`)] + stuckJob[strings.Index(stuckJob, `  group "ok"`):]
	submit(fits)
	waitFor(t, 20*time.Second, "the placement failure to go once the job fits", func() bool {
		out, code = a.cli(dir, "job", "status", "stuck")
		return code == 0 && !strings.Contains(out, "\nPlacement Failure\n") && strings.Contains(out, "\nAllocations\n")
	})

	// Stuck again, then stopped: a stopped job waits for nothing.
	submit(stuckJob)
	waitFor(t, 20*time.Second, "the placement failure of the new version", func() bool {
		out, code = a.cli(dir, "job", "status", "stuck")
		return code == 0 && strings.Contains(out, `Task Group "win" (failed to place 2 allocations):`)
	})
	if out, code := a.cli(dir, "job", "stop", "-detach", "stuck"); code != 0 {
		t.Fatalf("job stop (%d):\n%s", code, out)
	}
	deregistered := regexp.MustCompile(`(?m)^[0-9a-f]{8}\s+50\s+job-deregister\s+complete\s+false$`)
	waitFor(t, 20*time.Second, "the placement failure to go once the job is stopped", func() bool {
		out, code = a.cli(dir, "job", "status", "-evals", "stuck")
		return code == 0 && deregistered.MatchString(out) && !strings.Contains(out, "\nPlacement Failure\n")
	})

}
