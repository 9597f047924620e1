package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
)

// hostVolumeJob is a batch job whose group mounts the host volumes "data"
// (read-write) at /data and "conf" (read-only) at /srv/conf into one task.
func hostVolumeJob(id, driver string, config map[string]any) *api.Job {
	job := api.NewBatchJob(id, id, "global", 50)
	job.Datacenters = []string{"*"}
	tg := api.NewTaskGroup("g", 1)
	tg.Volumes = map[string]*api.VolumeRequest{
		"data": {Name: "data", Type: "host", Source: "data"},
		"conf": {Name: "conf", Type: "host", Source: "conf", ReadOnly: true},
	}
	tg.RestartPolicy = &api.RestartPolicy{Attempts: ptr(0), Mode: ptr("fail"), Interval: ptr(time.Hour), Delay: ptr(time.Second)}
	tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: ptr(0), Unlimited: ptr(false)}
	task := api.NewTask("t", driver)
	task.Config = config
	task.Resources = &api.Resources{CPU: ptr(50), MemoryMB: ptr(32)}
	task.VolumeMounts = []*api.VolumeMount{
		{Volume: ptr("data"), Destination: ptr("/data")},
		{Volume: ptr("conf"), Destination: ptr("/srv/conf")},
	}
	tg.AddTask(task)
	return job.AddTaskGroup(tg)
}

// A real agent whose client config has host volumes: the node reports
// them; an exec task (and a docker one when the engine is up) writes a
// file into the read-write volume that is then found at the host path,
// cannot write into the read-only one, and keeps its NOMAD_* env; a job
// asking for a volume no node has stays pending with a placement failure
// naming the host volume constraint.
func TestHostVolumeMountedIntoTasks(t *testing.T) {
	data, conf := t.TempDir(), t.TempDir()
	for _, d := range []string{data, conf} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(conf, "app.conf"), []byte("from-host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, "", []string{"-dev"}, map[string]any{"client": map[string]any{
		"host_volume": map[string]any{
			"data": map[string]any{"path": data},
			"conf": map[string]any{"path": conf, "read_only": true},
		},
	}})
	a.waitReady(true)
	requireExecDriver(t, a, "exec")

	nodes, _, err := a.client.Nodes().List(nil)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes %v %v", nodes, err)
	}
	node, _, err := a.client.Nodes().Info(nodes[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if hv := node.HostVolumes["data"]; hv == nil || hv.Path != data || hv.ReadOnly {
		t.Fatalf("node host volume data = %+v, want %s read-write", hv, data)
	}
	if hv := node.HostVolumes["conf"]; hv == nil || hv.Path != conf || !hv.ReadOnly {
		t.Fatalf("node host volume conf = %+v, want %s read-only", hv, conf)
	}

	script := func(name string) string {
		return `echo ` + name + `-wrote > /data/` + name + `.txt && cat /srv/conf/app.conf && ` +
			`(touch /srv/conf/x 2>/dev/null && echo ro=writable || echo ro=refused); echo "taskdir=$NOMAD_TASK_DIR"`
	}
	run := func(id, driver string, config map[string]any) {
		t.Helper()
		if _, _, err := a.client.Jobs().Register(hostVolumeJob(id, driver, config), nil); err != nil {
			t.Fatalf("%s: register: %v", id, err)
		}
		var allocID string
		waitFor(t, 90*time.Second, id+" complete", func() bool {
			s := a.allocsOf(id)
			if len(s) == 1 && s[0].ClientStatus == "failed" {
				full, _, _ := a.client.Allocations().Info(s[0].ID, nil)
				t.Fatalf("%s failed: %+v", id, full.TaskStates["t"])
			}
			if len(s) == 1 && s[0].ClientStatus == "complete" {
				allocID = s[0].ID
				return true
			}
			return false
		})
		out := a.catLog(allocID, "t", "stdout")
		for _, want := range []string{"from-host\n", "ro=refused\n", "taskdir=/local\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: stdout lacks %q:\n%s", id, want, out)
			}
		}
		if b, err := os.ReadFile(filepath.Join(data, id+".txt")); err != nil || string(b) != id+"-wrote\n" {
			t.Errorf("%s: the task's file is not at the host path: %q %v", id, b, err)
		}
		if _, err := os.Stat(filepath.Join(conf, "x")); err == nil {
			t.Errorf("%s: the task wrote into the read-only volume", id)
		}
	}
	run("hv-exec", "exec", map[string]any{"command": "/bin/sh", "args": []string{"-c", script("hv-exec")}})

	missing := hostVolumeJob("hv-missing", "exec", map[string]any{"command": "/bin/true"})
	missing.TaskGroups[0].Volumes["data"].Source = "no-such-volume"
	if _, _, err := a.client.Jobs().Register(missing, nil); err != nil {
		t.Fatal(err)
	}
	var failed map[string]*api.AllocationMetric
	waitFor(t, 30*time.Second, "the placement failure", func() bool {
		evals, _, err := a.client.Jobs().Evaluations("hv-missing", nil)
		if err != nil {
			return false
		}
		for _, e := range evals {
			if len(e.FailedTGAllocs) > 0 {
				failed = e.FailedTGAllocs
				return true
			}
		}
		return false
	})
	if m := failed["g"]; m == nil || m.ConstraintFiltered["missing compatible host volumes"] != 1 {
		t.Fatalf("placement failure %+v, want one node filtered by \"missing compatible host volumes\"", failed["g"])
	}
	if s := a.allocsOf("hv-missing"); len(s) != 0 {
		t.Fatalf("a job asking for a missing volume was placed: %+v", s)
	}

	if os.Getenv("CI") != "true" {
		if _, err := os.Stat("/var/run/docker.sock"); err != nil {
			t.Log("no docker engine: docker part skipped")
			return
		}
	}
	dcli := dockertest.Client(t)
	img := dockertest.BuildBusybox(t, dcli)
	waitFor(t, 30*time.Second, "docker healthy", func() bool {
		n, _, err := a.client.Nodes().Info(nodes[0].ID, nil)
		return err == nil && n.Drivers["docker"] != nil && n.Drivers["docker"].Healthy
	})
	run("hv-docker", "docker", map[string]any{"image": img, "command": "/bin/sh", "args": []string{"-c", script("hv-docker")}})
}

// The volume stays mounted in an exec task across a client agent restart
// (the task is re-attached, not restarted) and across a task restart (the
// new start mounts it again): the task's writes keep reaching the host
// path throughout.
func TestHostVolumeSurvivesClientAndTaskRestart(t *testing.T) {
	vol := t.TempDir()
	if err := os.Chmod(vol, 0o777); err != nil {
		t.Fatal(err)
	}
	srv := startAgent(t, t.TempDir(), []string{"-server"}, map[string]any{
		"server": map[string]any{"bootstrap_expect": 1}, "log_level": "INFO",
	})
	srv.waitReady(false)
	clientDir := t.TempDir()
	t.Cleanup(func() { killProcsUnder(clientDir) })
	cli := startAgent(t, clientDir, []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srv.rpc)}, map[string]any{
		"client":             map[string]any{"host_volume": map[string]any{"data": map[string]any{"path": vol}}},
		"leave_on_interrupt": false,
		"log_level":          "INFO",
	})
	waitFor(t, 20*time.Second, "client node ready", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	requireExecDriver(t, srv, "exec")

	job := hostVolumeJob("hv-restart", "exec", map[string]any{"command": "/bin/sh", "args": []string{"-c",
		"run=$(cat /proc/sys/kernel/random/uuid); while true; do echo $run >> /data/log; sleep 0.2; done"}})
	job.Type = ptr("service")
	tg := job.TaskGroups[0]
	delete(tg.Volumes, "conf")
	tg.Tasks[0].VolumeMounts = tg.Tasks[0].VolumeMounts[:1]
	tg.RestartPolicy = &api.RestartPolicy{Attempts: ptr(3), Mode: ptr("fail"), Interval: ptr(time.Hour), Delay: ptr(time.Second)}
	if _, _, err := srv.client.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(vol, "log")
	lines := func() []string {
		b, _ := os.ReadFile(logPath)
		return strings.Fields(string(b))
	}
	growing := func(what string) {
		t.Helper()
		n := len(lines())
		waitFor(t, 30*time.Second, what, func() bool { return len(lines()) >= n+5 })
	}
	growing("the task writing into the volume")
	// Each start of the task writes its own run ID.
	firstRun := lines()[len(lines())-1]

	cli.interrupt(30 * time.Second)
	growing("the task writing into the volume while the client is down")
	cli.start()
	waitFor(t, 60*time.Second, "the client back", func() bool {
		nodes, _, err := srv.client.Nodes().List(nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == "ready"
	})
	growing("the re-attached task writing into the volume")
	if last := lines()[len(lines())-1]; last != firstRun {
		t.Fatalf("the task was restarted by the client restart (run %s, then %s); it should be re-attached", firstRun, last)
	}

	allocs := srv.allocsOf("hv-restart")
	if len(allocs) != 1 {
		t.Fatalf("allocations %+v", allocs)
	}
	// The node's status may still be the one from before the restart: the
	// request is retried until the client's session with the servers is
	// back.
	var restartErr error
	waitFor(t, 30*time.Second, "the restart request accepted", func() bool {
		restartErr = srv.client.Allocations().Restart(&api.Allocation{ID: allocs[0].ID}, "t", nil)
		return restartErr == nil
	})
	waitFor(t, 60*time.Second, "the restarted task writing into the volume", func() bool {
		l := lines()
		return len(l) > 0 && l[len(l)-1] != firstRun
	})
	growing("the restarted task still writing into the volume")
}
