package integration

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// badInput is one hostile or careless request of issue #11 items 1 and 2.
type badInput struct {
	name string
	send func(c *api.Client) error
	want string // in the 400's message
}

func badInputs() []badInput {
	resJob := func(mut func(r *api.Resources)) *api.Job {
		j := rawExecJob("bad-res", "batch", 1, "true")
		mut(j.TaskGroups[0].Tasks[0].Resources)
		return j
	}
	register := func(j *api.Job) func(c *api.Client) error {
		return func(c *api.Client) error { _, _, err := c.Jobs().Register(j, nil); return err }
	}
	return []badInput{
		{"count 1e9 at register", register(rawExecJob("huge", "service", 1_000_000_000, "sleep 600")),
			`Task group "g": count 1000000000 exceeds the server's job_max_count (50000)`},
		{"count 1e9 at scale", func(c *api.Client) error {
			_, _, err := c.Jobs().Scale("good", "g", ptr(1_000_000_000), "", false, nil, nil)
			return err
		}, `Task group "g": count 1000000000 exceeds the server's job_max_count (50000)`},
		{"count 1e9 at plan", func(c *api.Client) error {
			_, _, err := c.Jobs().Plan(rawExecJob("huge", "service", 1_000_000_000, "sleep 600"), false, nil)
			return err
		}, `count 1000000000 exceeds the server's job_max_count`},
		{"MemoryMB int64 max", register(resJob(func(r *api.Resources) { r.MemoryMB = ptr(math.MaxInt64) })),
			`task "t": Resources.MemoryMB 9223372036854775807 exceeds the maximum`},
		{"CPU int64 max", register(resJob(func(r *api.Resources) { r.CPU = ptr(math.MaxInt64) })),
			`task "t": Resources.CPU 9223372036854775807 exceeds the maximum`},
		{"Cores -1", register(resJob(func(r *api.Resources) { r.Cores = ptr(-1) })),
			`task "t": Resources.Cores must not be negative`},
		{"DiskMB -10", register(resJob(func(r *api.Resources) { r.DiskMB = ptr(-10) })),
			`task "t": Resources.DiskMB must not be negative`},
	}
}

// refused asserts a 400 whose message contains want.
func refused(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: accepted", what)
	}
	if !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: got %v, want a 400 containing %q", what, err, want)
	}
}

// healthy asserts the agent has a leader, answers /v1/jobs, and still has
// the good job as it was registered.
func healthy(t *testing.T, a *agent) {
	t.Helper()
	leader, err := a.client.Status().Leader()
	if err != nil || leader == "" {
		t.Fatalf("no leader: %q %v", leader, err)
	}
	jobs, _, err := a.client.Jobs().List(nil)
	if err != nil {
		t.Fatalf("/v1/jobs: %v", err)
	}
	for _, j := range jobs {
		if j.ID == "huge" || j.ID == "bad-res" {
			t.Fatalf("refused job %q was stored", j.ID)
		}
	}
	good, _, err := a.client.Jobs().Info("good", nil)
	if err != nil {
		t.Fatalf("good job: %v", err)
	}
	if *good.Version != 0 || *good.TaskGroups[0].Count != 1 {
		t.Fatalf("good job changed: version %d count %d", *good.Version, *good.TaskGroups[0].Count)
	}
}

// Issue #11 items 1 and 2 against the built binary: a count of a billion
// (register, scale, plan) and resource asks out of range are refused with
// a 400 naming the group or task and field, validate reports them, and the
// agent stays healthy with the earlier job intact.
func TestBadCountsAndResourcesRefused(t *testing.T) {
	a := devAgent(t)
	if _, _, err := a.client.Jobs().Register(rawExecJob("good", "batch", 1, "true"), nil); err != nil {
		t.Fatal(err)
	}
	for _, in := range badInputs() {
		refused(t, in.name, in.send(a.client), in.want)
		healthy(t, a)
	}
	v, _, err := a.client.Jobs().Validate(rawExecJob("huge", "service", 1_000_000_000, "sleep 600"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.ValidationErrors) != 1 || !strings.Contains(v.ValidationErrors[0], "exceeds the server's job_max_count (50000)") {
		t.Fatalf("validate: %q", v.ValidationErrors)
	}

	// The same from a jobspec through the CLI: validate and run exit 1,
	// plan 255 (its error code, as Nomad's), each naming the group and the
	// limit.
	dir := t.TempDir()
	spec := `job "huge" {
  group "web" {
    count = 1000000000
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
    }
  }
}
`
	if err := os.WriteFile(dir+"/huge.nomad.hcl", []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cmd  []string
		exit int
	}{{[]string{"job", "validate", "huge.nomad.hcl"}, 1}, {[]string{"job", "plan", "huge.nomad.hcl"}, 255}, {[]string{"job", "run", "huge.nomad.hcl"}, 1}} {
		cmd := c.cmd
		out, code := a.cli(dir, cmd...)
		if code != c.exit || !strings.Contains(out, `Task group "web": count 1000000000 exceeds the server's job_max_count (50000)`) {
			t.Fatalf("%v (exit %d):\n%s", cmd, code, out)
		}
	}
	healthy(t, a)
}

// rssMB is the resident memory of pid in MB.
func rssMB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return kb / 1024
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// The fault test of items 1 and 2: a non-dev server and client with a data
// directory takes a good job; after each bad input it is killed with
// SIGKILL and comes back on the same directory healthy with the good job
// intact. Then, with job_max_count = 0 (as a job committed before the
// limit existed), a count of a billion is accepted: the scheduler places
// nothing it cannot and builds nothing per allocation, so the server stays
// small and answers, and after another SIGKILL it replays that job and its
// evaluation without running out of memory.
func TestBadInputsThenKill9RestartHealthy(t *testing.T) {
	dataDir := t.TempDir()
	extra := func(jobMaxCount *int) map[string]any {
		srv := map[string]any{"enabled": true, "bootstrap_expect": 1}
		if jobMaxCount != nil {
			srv["job_max_count"] = *jobMaxCount
		}
		return map[string]any{
			"server": srv,
			"client": map[string]any{"enabled": true},
			"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
		}
	}
	a := startAgent(t, dataDir, nil, extra(nil))
	a.waitReady(true)
	if _, _, err := a.client.Jobs().Register(rawExecJob("good", "batch", 1, "true"), nil); err != nil {
		t.Fatal(err)
	}
	for _, in := range badInputs() {
		refused(t, in.name, in.send(a.client), in.want)
		a.kill()
		a = startAgent(t, dataDir, nil, extra(nil))
		a.waitReady(true)
		healthy(t, a)
	}

	// Limit off: the billion is stored. Its ask fits no node, so the
	// evaluation blocks at once with the rest queued.
	a.kill()
	c := startAgent(t, dataDir, nil, extra(ptr(0)))
	c.waitReady(true)
	huge := rawExecJob("huge-allowed", "service", 1_000_000_000, "sleep 600")
	huge.TaskGroups[0].Tasks[0].Resources.MemoryMB = ptr(1_000_000)
	resp, _, err := c.client.Jobs().Register(huge, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the billion's evaluation to finish", func() bool {
		ev, _, err := c.client.Evaluations().Info(resp.EvalID, nil)
		return err == nil && ev.Status == "complete"
	})
	ev, _, _ := c.client.Evaluations().Info(resp.EvalID, nil)
	if ev.QueuedAllocations["g"] != 1_000_000_000 || ev.BlockedEval == "" {
		t.Fatalf("eval: queued %v, blocked eval %q", ev.QueuedAllocations, ev.BlockedEval)
	}
	if rss := rssMB(t, c.cmd.Process.Pid); rss > 1024 {
		t.Fatalf("agent RSS %d MB after scheduling a count of a billion", rss)
	}
	healthyWith := func(a *agent) {
		t.Helper()
		healthy(t, a)
		j, _, err := a.client.Jobs().Info("huge-allowed", nil)
		if err != nil || *j.TaskGroups[0].Count != 1_000_000_000 {
			t.Fatalf("huge job after restart: %v", err)
		}
	}
	healthyWith(c)
	c.kill()

	d := startAgent(t, dataDir, nil, extra(ptr(0)))
	d.waitReady(true)
	healthyWith(d)
	if rss := rssMB(t, d.cmd.Process.Pid); rss > 1024 {
		t.Fatalf("agent RSS %d MB after replaying a count of a billion", rss)
	}
	// Purging it works and leaves the rest.
	if _, _, err := d.client.Jobs().Deregister("huge-allowed", true, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the purge", func() bool {
		_, _, err := d.client.Jobs().Info("huge-allowed", nil)
		return err != nil && strings.Contains(err.Error(), "404")
	})
	healthy(t, d)
}
