package integration

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// readStdout returns a completed job's single alloc stdout.
func readStdout(t *testing.T, a *agent, jobID string) string {
	t.Helper()
	var alloc *api.Allocation
	waitFor(t, 30*time.Second, jobID+" alloc complete", func() bool {
		stubs := a.allocsOf(jobID)
		if len(stubs) != 1 || stubs[0].ClientStatus != "complete" {
			return false
		}
		var err error
		alloc, _, err = a.client.Allocations().Info(stubs[0].ID, nil)
		return err == nil
	})
	r, err := a.client.AllocFS().Cat(alloc, "alloc/logs/t.stdout.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	return string(b)
}

func childrenOf(t *testing.T, a *agent, parent string) []*api.JobListStub {
	t.Helper()
	stubs, _, err := a.client.Jobs().PrefixList(parent + "/")
	if err != nil {
		t.Fatal(err)
	}
	var out []*api.JobListStub
	for _, s := range stubs {
		if s.ParentID == parent {
			out = append(out, s)
		}
	}
	return out
}

// A periodic parent is never scheduled itself; forcing it launches a child
// <parent>/periodic-<unix> that runs, through the api client and the CLI.
func TestPeriodicForceRunsChild(t *testing.T) {
	a := devAgent(t)
	job := rawExecJob("cron", "batch", 1, `echo "tick from $NOMAD_JOB_ID"`)
	job.Periodic = &api.PeriodicConfig{Spec: ptr("* * * * *"), ProhibitOverlap: ptr(true)}
	resp, _, err := a.client.Jobs().Register(job, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.EvalID != "" {
		t.Fatalf("periodic parent got evaluation %s", resp.EvalID)
	}
	evalID, _, err := a.client.Jobs().PeriodicForce("cron", nil)
	if err != nil || evalID == "" {
		t.Fatalf("periodic force: eval %q, err %v", evalID, err)
	}
	eval, _, err := a.client.Evaluations().Info(evalID, nil)
	if err != nil || eval.TriggeredBy != "periodic-job" || !strings.HasPrefix(eval.JobID, "cron/periodic-") {
		t.Fatalf("eval %+v err %v", eval, err)
	}
	if out := readStdout(t, a, eval.JobID); strings.TrimSpace(out) != "tick from "+eval.JobID {
		t.Fatalf("child stdout %q", out)
	}
	child, _, err := a.client.Jobs().Info(eval.JobID, nil)
	if err != nil || deref(child.ParentID) != "cron" || child.Periodic != nil {
		t.Fatalf("child %+v err %v", child, err)
	}
	waitFor(t, 30*time.Second, "parent summary counts the dead child", func() bool {
		sum, _, err := a.client.Jobs().Summary("cron", nil)
		return err == nil && sum.Children != nil && sum.Children.Dead == 1
	})

	// The CLI verb forces another launch.
	cmd := exec.Command(droverBin, "job", "periodic", "force", "-detach", "cron")
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+a.url(""))
	out, err := cmd.CombinedOutput()
	_, cliEval, _ := strings.Cut(string(out), "Evaluation ID: ")
	cliEval = strings.TrimSpace(cliEval)
	if err != nil || !strings.Contains(string(out), "Force periodic successful") || cliEval == "" {
		t.Fatalf("job periodic force: %v\n%s", err, out)
	}
	if ev, _, err := a.client.Evaluations().Info(cliEval, nil); err != nil || ev.TriggeredBy != "periodic-job" ||
		!strings.HasPrefix(ev.JobID, "cron/periodic-") {
		t.Fatalf("CLI force eval %+v err %v", ev, err)
	}
}

// A dispatch with a payload runs a child whose task reads the payload file;
// missing required meta is refused naming the key.
func TestDispatchPayloadReachesTask(t *testing.T) {
	a := devAgent(t)
	job := rawExecJob("proc", "batch", 1, `cat "$NOMAD_TASK_DIR/input.txt"; echo " mode=$NOMAD_META_mode"`)
	job.ParameterizedJob = &api.ParameterizedJobConfig{Payload: "required", MetaRequired: []string{"mode"}}
	job.TaskGroups[0].Tasks[0].DispatchPayload = &api.DispatchPayloadConfig{File: "input.txt"}
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}

	_, _, err := a.client.Jobs().Dispatch("proc", nil, []byte("data"), "", nil)
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "mode") {
		t.Fatalf("dispatch without required meta: %v, want a 400 naming \"mode\"", err)
	}

	resp, _, err := a.client.Jobs().Dispatch("proc", map[string]string{"mode": "fast"}, []byte("payload-42"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.DispatchedJobID, "proc/dispatch-") || resp.EvalID == "" {
		t.Fatalf("dispatch reply %+v", resp)
	}
	if out := readStdout(t, a, resp.DispatchedJobID); !strings.Contains(out, "payload-42") || !strings.Contains(out, "mode=fast") {
		t.Fatalf("child stdout %q, want the payload and its meta", out)
	}

	// Through the CLI, payload on stdin.
	cmd := exec.Command(droverBin, "job", "dispatch", "-detach", "-meta", "mode=slow", "proc", "-")
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+a.url(""))
	cmd.Stdin = strings.NewReader("from-stdin")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Dispatched Job ID") {
		t.Fatalf("job dispatch: %v\n%s", err, out)
	}
	var id string
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "Dispatched Job ID" {
			id = strings.TrimSpace(v)
		}
	}
	if got := readStdout(t, a, id); !strings.Contains(got, "from-stdin") || !strings.Contains(got, "mode=slow") {
		t.Fatalf("CLI-dispatched child stdout %q", got)
	}
	cmd = exec.Command(droverBin, "job", "dispatch", "proc", "-")
	cmd.Env = append(os.Environ(), "NOMAD_ADDR="+a.url(""))
	cmd.Stdin = strings.NewReader("x")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "mode") {
		t.Fatalf("CLI dispatch without meta: %v\n%s", err, out)
	}
	waitFor(t, 30*time.Second, "parent summary counts two children", func() bool {
		sum, _, err := a.client.Jobs().Summary("proc", nil)
		return err == nil && sum.Children != nil && sum.Children.Pending+sum.Children.Running+sum.Children.Dead == 2
	})
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
