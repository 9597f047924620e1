package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/client/cpuset"
	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
)

// cpusAllowedList is a process's Cpus_allowed_list ("" when gone).
func cpusAllowedList(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// cpusetJob is a raw_exec task that writes its PID to local/pid and
// sleeps; cores > 0 reserves that many cores.
func cpusetJob(id string, cores int) *api.Job {
	job := rawExecJob(id, "service", 1, `echo $$ > "$NOMAD_TASK_DIR/pid"; exec sleep 600`)
	if cores > 0 {
		job.TaskGroups[0].Tasks[0].Resources = &api.Resources{Cores: ptr(cores), MemoryMB: ptr(32)}
	}
	return job
}

// runningTaskPID registers job, waits for its allocation to run and
// returns the task's PID (read through the alloc fs API).
func runningTaskPID(t *testing.T, a *agent, job *api.Job) int {
	t.Helper()
	if _, _, err := a.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var allocID string
	waitFor(t, 60*time.Second, *job.ID+" running", func() bool {
		s := a.allocsOf(*job.ID)
		if len(s) == 1 && s[0].ClientStatus == "failed" {
			full, _, _ := a.client.Allocations().Info(s[0].ID, nil)
			t.Fatalf("%s failed: %+v", *job.ID, full.TaskStates["t"])
		}
		if len(s) == 1 && s[0].ClientStatus == "running" {
			allocID = s[0].ID
		}
		return allocID != ""
	})
	pid := 0
	waitFor(t, 20*time.Second, *job.ID+" pid", func() bool {
		resp, err := http.Get(a.url("/v1/client/fs/cat/" + allocID + "?path=t/local/pid"))
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return resp.StatusCode == 200 && pid > 0
	})
	return pid
}

// cpusetCheck polls until pid runs on want (Cpus_allowed_list).
func cpusetCheck(t *testing.T, what string, pid int, want string) {
	t.Helper()
	waitFor(t, 20*time.Second, fmt.Sprintf("%s (pid %d) on CPUs %s", what, pid, want), func() bool {
		return cpusAllowedList(pid) == want
	})
}

// requireCPUs needs root and at least 2 CPUs (the CI machines have 2:
// reserve 1, the other tasks get the other) and returns the node's CPUs
// as a cpuset list ("0-1").
func requireCPUs(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but not running as root: cannot test cpusets")
		}
		t.Skip("cpusets need root")
	}
	n := runtime.NumCPU()
	if n < 2 {
		t.Skipf("needs 2 CPUs; this node has %d", n)
	}
	ids := make([]uint16, n)
	for i := range ids {
		ids[i] = uint16(i)
	}
	return cpuset.New(ids...).String()
}

// without is the cpuset list all less core.
func without(t *testing.T, all, core string) string {
	t.Helper()
	a, err1 := cpuset.Parse(all)
	c, err2 := cpuset.Parse(core)
	if err1 != nil || err2 != nil || c.Len() != 1 || !a.Contains(c.IDs()[0]) {
		t.Fatalf("the task reserving 1 core runs on %q (node CPUs %s)", core, all)
	}
	return a.Difference(c).String()
}

// `resources { cores = 1 }` on a dev agent with 2 CPUs: the task reserving
// a core runs on it alone, and a task without cores, already running, is
// moved onto the other core (their processes' Cpus_allowed_list never
// overlap); when the reserving job stops, the core comes back.
func TestCpusetTasksWithoutCoresStayOffReservedCores(t *testing.T) {
	all := requireCPUs(t)
	a := devAgent(t)
	shared := runningTaskPID(t, a, cpusetJob("shared", 0))
	cpusetCheck(t, "task without cores", shared, all)

	pinned := runningTaskPID(t, a, cpusetJob("pinned", 1))
	core := cpusAllowedList(pinned)
	other := without(t, all, core)
	cpusetCheck(t, "task without cores", shared, other)
	if got := cpusAllowedList(pinned); got != core {
		t.Fatalf("the reserving task moved from %s to %q", core, got)
	}

	// A task without cores started now starts on the shared core.
	late := runningTaskPID(t, a, cpusetJob("late", 0))
	cpusetCheck(t, "task without cores started later", late, other)

	if _, _, err := a.client.Jobs().Deregister("pinned", false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the reserving task stopped", func() bool { return !pidAlive(pinned) })
	cpusetCheck(t, "task without cores", shared, all)
	cpusetCheck(t, "task without cores started later", late, all)
}

// A client killed and restarted while a task reserves a core: the restored
// allocations give the shared cpuset again, so the re-attached task without
// cores stays off the reserved core, and it still follows the set: when the
// reserving job stops, it gets the core back.
func TestCpusetRestoredAfterClientRestart(t *testing.T) {
	all := requireCPUs(t)
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1}, "log_level": "INFO",
	})
	srv.waitReady(false)
	cli := startAgent(t, t.TempDir(), []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"leave_on_interrupt": false, "log_level": "INFO",
		"plugin": map[string]any{"raw_exec": map[string]any{"config": map[string]any{"enabled": true}}},
	})
	nodeReady := func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	}
	waitFor(t, 20*time.Second, "client node ready", nodeReady)
	shared := runningTaskPID(t, cli, cpusetJob("shared", 0))
	pinned := runningTaskPID(t, cli, cpusetJob("pinned", 1))
	t.Cleanup(func() {
		// The client leaves its tasks running when it stops: stop them
		// while it runs (it removes their cgroups), kill what is left.
		_, _, _ = srv.client.Jobs().Deregister("shared", true, nil)
		_, _, _ = srv.client.Jobs().Deregister("pinned", true, nil)
		deadline := time.Now().Add(20 * time.Second)
		for (pidAlive(shared) || pidAlive(pinned)) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		_ = syscall.Kill(shared, syscall.SIGKILL)
		_ = syscall.Kill(pinned, syscall.SIGKILL)
	})
	core := cpusAllowedList(pinned)
	other := without(t, all, core)
	cpusetCheck(t, "task without cores", shared, other)

	cli.kill()
	cli.start()
	waitFor(t, 60*time.Second, "client node ready again", nodeReady)
	if !pidAlive(shared) || !pidAlive(pinned) {
		t.Fatal("a task did not survive the client restart")
	}
	if got := cpusAllowedList(shared); got != other {
		t.Fatalf("after the restart the task without cores runs on %q, want %s", got, other)
	}
	if _, _, err := srv.client.Jobs().Deregister("pinned", false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the reserving task stopped", func() bool { return !pidAlive(pinned) })
	cpusetCheck(t, "re-attached task without cores", shared, all)
}

// A docker container without cores, running on a 2-CPU dev agent, is
// moved off the core a raw_exec task reserves (through the engine's
// container update) and gets it back when that job stops.
func TestCpusetDockerContainerFollowsSharedSet(t *testing.T) {
	dcli := dockertest.Client(t) // the machine has an engine (or CI fails here)
	img := dockertest.BuildBusybox(t, dcli)
	all := requireCPUs(t)
	a := devAgent(t)
	waitFor(t, 30*time.Second, "docker healthy", func() bool {
		nodes, _, err := a.client.Nodes().List(&api.QueryOptions{Params: map[string]string{"resources": "true"}})
		if err != nil || len(nodes) != 1 {
			return false
		}
		d := nodes[0].Drivers["docker"]
		return d != nil && d.Healthy
	})
	if _, _, err := a.client.Jobs().Register(dockerJob("ctr", img), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _, _ = a.client.Jobs().Deregister("ctr", true, nil) })
	pid := 0
	waitFor(t, 60*time.Second, "the container running", func() bool {
		s := a.allocsOf("ctr")
		if len(s) != 1 || s[0].ClientStatus != "running" {
			return false
		}
		cs := dockerContainers(t, dcli, s[0].ID)
		if len(cs) != 1 {
			return false
		}
		info, err := dcli.ContainerInspect(context.Background(), cs[0].ID)
		if err == nil && info.State != nil {
			pid = info.State.Pid
		}
		return pid > 0
	})
	cpusetCheck(t, "container without cores", pid, all)
	pinned := runningTaskPID(t, a, cpusetJob("pinned", 1))
	other := without(t, all, cpusAllowedList(pinned))
	cpusetCheck(t, "container without cores", pid, other)
	if _, _, err := a.client.Jobs().Deregister("pinned", false, nil); err != nil {
		t.Fatal(err)
	}
	cpusetCheck(t, "container without cores", pid, all)
}
