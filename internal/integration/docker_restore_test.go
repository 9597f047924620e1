package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
)

var tickRe = regexp.MustCompile(`tick (\d+)`)

// lastTick is the highest "tick N" in a log file (0: none yet).
func lastTick(path string) int {
	b, _ := os.ReadFile(path)
	n := 0
	for _, m := range tickRe.FindAllSubmatch(b, -1) {
		if v, _ := strconv.Atoi(string(m[1])); v > n {
			n = v
		}
	}
	return n
}

// A client agent killed with SIGKILL and started again re-attaches to its
// running container without restarting it (same container, same start
// time, no second one), copies its output into the task's log file from
// where it stopped (the lines printed during the outage too, none twice),
// and still stops and removes it when the job is stopped.
func TestDockerClientRestartReattaches(t *testing.T) {
	dcli := dockertest.Client(t)
	img := dockertest.BuildBusybox(t, dcli)
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1}, "log_level": "INFO",
	})
	srv.waitReady(false)
	clientDir := t.TempDir()
	cli := startAgent(t, clientDir, []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"leave_on_interrupt": false,
		"log_level":          "INFO",
	})
	nodeReady := func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	}
	waitFor(t, 20*time.Second, "client node ready", nodeReady)

	job := dockerJob("dre", img)
	task := job.TaskGroups[0].Tasks[0]
	task.Config["command"] = "/bin/sh"
	task.Config["args"] = []string{"-c", `i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.1; done`}
	job.TaskGroups[0].RestartPolicy = &api.RestartPolicy{Attempts: ptr(0), Mode: ptr("fail"), Interval: ptr(time.Hour), Delay: ptr(time.Second)}
	job.TaskGroups[0].ReschedulePolicy = &api.ReschedulePolicy{Attempts: ptr(0), Unlimited: ptr(false)}
	if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	var allocID string
	waitFor(t, 60*time.Second, "the docker task running", func() bool {
		s := srv.allocsOf("dre")
		if len(s) == 1 && s[0].ClientStatus == "running" {
			allocID = s[0].ID
		}
		return allocID != ""
	})
	// The client agent leaves its containers running when it stops (as it
	// should): a failed run must not leave this one behind.
	t.Cleanup(func() {
		for _, c := range dockerContainers(t, dcli, allocID) {
			_ = dcli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
		}
	})
	logPath := filepath.Join(clientDir, "client", "alloc", allocID, "alloc", "logs", "t.stdout.0")
	waitFor(t, 20*time.Second, "output in the log file", func() bool { return lastTick(logPath) > 3 })
	cs := dockerContainers(t, dcli, allocID)
	if len(cs) != 1 {
		t.Fatalf("want one container, got %+v", cs)
	}
	before, err := dcli.ContainerInspect(context.Background(), cs[0].ID)
	if err != nil {
		t.Fatal(err)
	}

	cli.kill()
	// The container keeps printing while no client copies its output.
	killedAt := lastTick(logPath)
	waitFor(t, 20*time.Second, "ticks printed during the outage", func() bool {
		rc, err := dcli.ContainerLogs(context.Background(), cs[0].ID, container.LogsOptions{ShowStdout: true, Tail: "1"})
		if err != nil {
			return false
		}
		defer rc.Close()
		var out, errb bytes.Buffer
		stdcopy.StdCopy(&out, &errb, rc)
		m := tickRe.FindSubmatch(out.Bytes())
		n := 0
		if m != nil {
			n, _ = strconv.Atoi(string(m[1]))
		}
		return n > killedAt+5
	})
	cli.start()
	waitFor(t, 60*time.Second, "client node ready again", nodeReady)
	seen := lastTick(logPath)
	waitFor(t, 60*time.Second, "output copied again after the restart", func() bool { return lastTick(logPath) > seen+5 })

	after, err := dcli.ContainerInspect(context.Background(), cs[0].ID)
	if err != nil {
		t.Fatalf("the container is gone after the client restart: %v", err)
	}
	if !after.State.Running || after.State.StartedAt != before.State.StartedAt || after.RestartCount != 0 {
		t.Fatalf("the container was restarted: started %s -> %s, running %v, restarts %d",
			before.State.StartedAt, after.State.StartedAt, after.State.Running, after.RestartCount)
	}
	if n := len(dockerContainers(t, dcli, allocID)); n != 1 {
		t.Fatalf("%d containers for the allocation after the restart", n)
	}
	// What the container printed while no client copied it is in the log
	// too: every tick once, at most a few lost in flight when the agent
	// was killed.
	ticks := map[int]int{}
	b, _ := os.ReadFile(logPath)
	for _, m := range tickRe.FindAllSubmatch(b, -1) {
		v, _ := strconv.Atoi(string(m[1]))
		ticks[v]++
	}
	last, missing := lastTick(logPath), 0
	for i := 1; i <= last; i++ {
		switch ticks[i] {
		case 0:
			missing++
		case 1:
		default:
			t.Fatalf("tick %d is in the log %d times", i, ticks[i])
		}
	}
	t.Logf("%d ticks, %d missing, none twice", last, missing)
	if missing > 3 {
		t.Fatalf("%d of %d ticks missing from the log after the restart", missing, last)
	}
	if s := srv.allocsOf("dre"); len(s) != 1 || s[0].ID != allocID || s[0].ClientStatus != "running" {
		t.Fatalf("allocations after the restart: %+v", s)
	}

	if _, _, err := srv.client.Jobs().Deregister("dre", false, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the container removed after the job stopped", func() bool {
		return len(dockerContainers(t, dcli, allocID)) == 0
	})
}
