package integration

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// requireExecDriver skips unless the dev agent's exec driver is healthy
// (root, cgroup v1), but fails when CI=true: a skip must never hide a
// broken driver there.
func requireExecDriver(t *testing.T, a *agent, driver string) {
	t.Helper()
	var info *api.DriverInfo
	waitFor(t, 20*time.Second, "the "+driver+" driver fingerprinted", func() bool {
		nodes, _, err := a.client.Nodes().List(nil)
		if err != nil || len(nodes) != 1 {
			return false
		}
		n, _, err := a.client.Nodes().Info(nodes[0].ID, nil)
		if err != nil {
			return false
		}
		info = n.Drivers[driver]
		return info != nil && (info.Healthy || info.HealthDescription != "checking the JVM (java -version)")
	})
	if info.Detected && info.Healthy {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but the %s driver is not healthy: %s", driver, info.HealthDescription)
	}
	t.Skipf("%s driver unavailable: %s", driver, info.HealthDescription)
}

func execGroup(name, script string, memMB int) *api.TaskGroup {
	tg := api.NewTaskGroup(name, 1)
	task := api.NewTask("t", "exec")
	task.Config = map[string]any{"command": "/bin/sh", "args": []string{"-c", script}}
	task.Resources = &api.Resources{CPU: ptr(50), MemoryMB: ptr(memMB)}
	tg.AddTask(task)
	tg.RestartPolicy = &api.RestartPolicy{Attempts: ptr(0), Mode: ptr("fail"), Interval: ptr(time.Hour), Delay: ptr(time.Second)}
	tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: ptr(0), Unlimited: ptr(false)}
	return tg
}

func (a *agent) catLog(allocID, task, stream string) string {
	r, err := a.client.AllocFS().Cat(&api.Allocation{ID: allocID}, "alloc/logs/"+task+"."+stream+".0", nil)
	if err != nil {
		return ""
	}
	defer r.Close()
	b, _ := io.ReadAll(r)
	return string(b)
}

// On a dev agent, an exec task is PID 1 of its own namespace and sees no
// host process, cannot read host files outside its root, runs as the
// configured user; one allocating past its memory limit is OOM-killed and
// its events say so; a fork bomb stops at the pids limit.
func TestExecDriverIsolationOnDevAgent(t *testing.T) {
	a := devAgent(t)
	requireExecDriver(t, a, "exec")
	secret := filepath.Join(t.TempDir(), "host-secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o644); err != nil {
		t.Fatal(err)
	}
	job := api.NewBatchJob("iso", "iso", "global", 50)
	job.Datacenters = []string{"*"}
	iso := execGroup("iso", `echo "pid=$$"; echo "procs=$(ls /proc | grep -c '^[0-9]')"; echo "user=$(id -un)"; `+
		`cat `+secret+` || echo "secret=invisible"; ls /`, 32)
	iso.Tasks[0].User = "nobody"
	oom := execGroup("oom", `tail /dev/zero`, 32)
	bomb := execGroup("bomb", `n=1; while [ $n -lt 200 ]; do sleep 60 & n=$((n+1)); echo "forked $n"; done`, 64)
	bomb.Tasks[0].Config["pids_limit"] = 16
	job.AddTaskGroup(iso)
	job.AddTaskGroup(oom)
	job.AddTaskGroup(bomb)
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	byGroup := map[string]*api.AllocationListStub{}
	waitFor(t, 60*time.Second, "every allocation done", func() bool {
		for _, s := range a.allocsOf("iso") {
			if s.ClientStatus == "complete" || s.ClientStatus == "failed" {
				byGroup[s.TaskGroup] = s
			}
		}
		return len(byGroup) == 3
	})

	out := a.catLog(byGroup["iso"].ID, "t", "stdout")
	t.Logf("isolated task's output:\n%s", out)
	if byGroup["iso"].ClientStatus != "complete" {
		t.Errorf("isolated task: %s\nstderr: %s", byGroup["iso"].ClientStatus, a.catLog(byGroup["iso"].ID, "t", "stderr"))
	}
	for _, want := range []string{"pid=1\n", "user=nobody\n", "secret=invisible\n", "local\n", "alloc\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("isolated task's output lacks %q", want)
		}
	}
	if i := strings.Index(out, "procs="); i < 0 || out[i+6] > '5' || out[i+7] != '\n' {
		t.Errorf("the task sees more processes than its own")
	}
	for _, hostOnly := range []string{"root\n", "home\n", "var\n", "opt\n"} {
		if strings.Contains(out, hostOnly) {
			t.Errorf("the task's root shows the host's /%s", strings.TrimSpace(hostOnly))
		}
	}

	al, _, err := a.client.Allocations().Info(byGroup["oom"].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	var term *api.TaskEvent
	for _, e := range al.TaskStates["t"].Events {
		if e.Type == "Terminated" {
			term = e
		}
	}
	if al.ClientStatus != "failed" || term == nil || term.Details["oom_killed"] != "true" || term.ExitCode != 137 || !strings.Contains(term.DisplayMessage, "OOM Killed") {
		t.Errorf("want the OOM task failed with a Terminated event saying OOM Killed, got %s %+v", al.ClientStatus, term)
	}

	bombOut := a.catLog(byGroup["bomb"].ID, "t", "stdout")
	bombErr := a.catLog(byGroup["bomb"].ID, "t", "stderr")
	if !strings.Contains(bombErr, "fork") || !strings.Contains(bombOut, "forked 16\n") || strings.Contains(bombOut, "forked 17\n") {
		t.Errorf("the fork bomb did not stop at pids_limit 16:\nstdout tail: %s\nstderr: %s", tail(bombOut, 3), bombErr)
	}
}

// `alloc exec` into an exec task runs inside its namespaces: the task is
// PID 1 there.
func TestExecDriverAllocExec(t *testing.T) {
	a := devAgent(t)
	requireExecDriver(t, a, "exec")
	job := api.NewServiceJob("ex", "ex", "global", 50)
	job.Datacenters = []string{"*"}
	job.AddTaskGroup(execGroup("g", "exec sleep 600", 32))
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var allocID string
	waitFor(t, 30*time.Second, "the task running", func() bool {
		s := a.allocsOf("ex")
		if len(s) == 1 && s[0].ClientStatus == "running" {
			allocID = s[0].ID
		}
		return allocID != ""
	})
	out, code := a.cli(t.TempDir(), "alloc", "exec", "-task", "t", allocID, "/bin/sh", "-c",
		`echo "pid1=$(tr '\0' ' ' < /proc/1/cmdline)"; echo "user=$(id -un)"; exit 4`)
	if code != 4 || !strings.Contains(out, "pid1=sleep 600 \n") || !strings.Contains(out, "user=nobody\n") {
		t.Fatalf("alloc exec (exit %d) did not run inside the task:\n%s", code, out)
	}
	// The task's cgroups answer the stats endpoint.
	st, err := a.client.Allocations().Stats(&api.Allocation{ID: allocID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ts := st.Tasks["t"]; ts == nil || ts.ResourceUsage == nil || ts.ResourceUsage.MemoryStats == nil || ts.ResourceUsage.MemoryStats.Usage == 0 {
		t.Fatalf("no memory stats for the exec task: %+v", st.Tasks)
	}
}

// A client agent killed with SIGKILL and started again re-attaches to its
// running exec task: same PID, not restarted; stopping the job then stops
// it.
func TestExecDriverClientRestartReattaches(t *testing.T) {
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1}, "log_level": "INFO",
	})
	srv.waitReady(false)
	clientDir := t.TempDir()
	cli := startAgent(t, clientDir, []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"leave_on_interrupt": false, "log_level": "INFO",
	})
	nodeReady := func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	}
	waitFor(t, 20*time.Second, "client node ready", nodeReady)
	requireExecDriver(t, srv, "exec")
	job := api.NewServiceJob("er", "er", "global", 50)
	job.Datacenters = []string{"*"}
	job.AddTaskGroup(execGroup("g", `i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.1; done`, 32))
	if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var allocID string
	waitFor(t, 30*time.Second, "the task running", func() bool {
		s := srv.allocsOf("er")
		if len(s) == 1 && s[0].ClientStatus == "running" {
			allocID = s[0].ID
		}
		return allocID != ""
	})
	shimState := filepath.Join(clientDir, "client", "alloc", allocID, "t", "private", "rawexec", "shim.json")
	pid := 0
	waitFor(t, 10*time.Second, "the task's pid recorded", func() bool {
		b, _ := os.ReadFile(shimState)
		if i := strings.Index(string(b), `"pid":`); i >= 0 {
			pid, _ = strconv.Atoi(strings.TrimRight(strings.SplitN(string(b[i+6:]), ",", 2)[0], "}"))
		}
		return pid > 0
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	logPath := filepath.Join(clientDir, "client", "alloc", allocID, "alloc", "logs", "t.stdout.0")
	waitFor(t, 20*time.Second, "output", func() bool { return lastTick(logPath) > 3 })

	cli.kill()
	killedAt := lastTick(logPath)
	waitFor(t, 20*time.Second, "the task keeps running while the agent is down", func() bool { return lastTick(logPath) > killedAt+5 })
	cli.start()
	waitFor(t, 60*time.Second, "client node ready again", nodeReady)
	seen := lastTick(logPath)
	waitFor(t, 60*time.Second, "output after the restart", func() bool { return lastTick(logPath) > seen+5 })
	if !pidAlive(pid) {
		t.Fatalf("task process %d is gone after the restart", pid)
	}
	al, _, err := srv.client.Allocations().Info(allocID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := al.TaskStates["t"]; al.ClientStatus != "running" || st == nil || st.Restarts != 0 || st.State != "running" {
		t.Fatalf("the task was restarted or lost: %s %+v", al.ClientStatus, st)
	}
	b, _ := os.ReadFile(shimState)
	if !strings.Contains(string(b), fmt.Sprintf(`"pid":%d,`, pid)) {
		t.Fatalf("the task has a new process: %s (was pid %d)", b, pid)
	}
	if _, _, err := srv.client.Jobs().Deregister("er", false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the task stopped", func() bool { return !pidAlive(pid) })
}
