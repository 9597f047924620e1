package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
	"github.com/drover-project/drover/internal/testnet"
)

// privateDockerd runs a second engine of its own (own socket, data root,
// bridge and vfs storage) that the test may stop and start again without
// touching the machine's dockerd. (Not --bridge=none: dockerd then deletes
// docker0, the machine's engine's bridge.)
type privateDockerd struct {
	t      *testing.T
	dir    string
	sock   string
	bridge string
	cmd    *exec.Cmd
}

func startPrivateDockerd(t *testing.T, dir string) *privateDockerd {
	t.Helper()
	// The bridge (and its subnet) is this run's alone: another run of the
	// test at once would otherwise share it and delete it at its end.
	nw := testnet.Claim(t)
	d := &privateDockerd{t: t, dir: dir, sock: filepath.Join(dir, "d.sock"), bridge: nw.Bridge}
	for _, args := range [][]string{
		{"link", "add", d.bridge, "type", "bridge"},
		{"addr", "add", nw.Addr(1) + "/24", "dev", d.bridge},
		{"link", "set", d.bridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", d.bridge).Run() })
	d.start()
	t.Cleanup(d.stop)
	return d
}

func (d *privateDockerd) start() {
	t := d.t
	t.Helper()
	d.cmd = exec.Command("dockerd", "--data-root", filepath.Join(d.dir, "root"), "--exec-root", filepath.Join(d.dir, "exec"),
		"--pidfile", filepath.Join(d.dir, "pid"), "-H", "unix://"+d.sock, "--bridge="+d.bridge, "--iptables=false", "--ip-masq=false", "--storage-driver=vfs")
	log, err := os.OpenFile(filepath.Join(d.dir, "dockerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.Stdout, d.cmd.Stderr = log, log
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cli := d.client()
	waitFor(t, 30*time.Second, "the private dockerd answers", func() bool {
		_, err := cli.Ping(context.Background())
		return err == nil
	})
}

func (d *privateDockerd) stop() {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		<-done
	}
	d.cmd = nil
}

func (d *privateDockerd) client() *client.Client {
	cli, err := client.NewClientWithOpts(client.WithHost("unix://"+d.sock), client.WithAPIVersionNegotiation())
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { cli.Close() })
	return cli
}

func dockerJob(id, image string) *api.Job {
	job := api.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"*"}
	tg := api.NewTaskGroup("g", 1)
	// Each start while the daemon is down fails at once and counts an
	// attempt: 200 at 1 s cover the longest outage the daemon test can
	// make (up to 60 s to see the driver unhealthy, 20 s queued, 30 s for
	// the daemon to answer again). With 10, an outage over about 10 s (a
	// loaded machine) used them up and the task waited out the 10 minute
	// interval before it ran again.
	tg.RestartPolicy = &api.RestartPolicy{Attempts: ptr(200), Interval: ptr(10 * time.Minute), Delay: ptr(time.Second), Mode: ptr("delay")}
	task := api.NewTask("t", "docker")
	task.Config = map[string]any{"image": image, "command": "/bin/sleep", "args": []string{"600"}, "network_mode": "host"}
	task.Resources = &api.Resources{CPU: ptr(20), MemoryMB: ptr(16)}
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	return job
}

// The docker daemon stopped while a task runs: the node reports the
// driver unhealthy and why, no new docker work is placed there, and both
// recover when the daemon returns.
func TestDockerDaemonStopsAndReturns(t *testing.T) {
	dockertest.Client(t) // the machine has an engine (or CI fails here)
	for _, bin := range []string{"dockerd", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI is set but %s is not installed: %v", bin, err)
			}
			t.Skipf("%s not installed", bin)
		}
	}
	dir, err := os.MkdirTemp("", "dd") // short: the socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// dockerd leaves its default network namespace bind-mounted.
		_ = syscall.Unmount(filepath.Join(dir, "exec", "netns", "default"), syscall.MNT_DETACH)
		os.RemoveAll(dir)
	})
	d := startPrivateDockerd(t, dir)
	img := dockertest.BuildBusybox(t, d.client())

	a := startAgent(t, "", []string{"-dev"}, map[string]any{
		"plugin": map[string]any{"docker": map[string]any{"config": map[string]any{"endpoint": "unix://" + d.sock}}},
	})
	a.waitReady(true)
	// Registered after the agent's cleanup, so it runs first (the agent
	// still answers).
	t.Cleanup(func() { logAllocs(t, a, d, "before", "during") })
	driver := func() *api.DriverInfo {
		nodes, _, err := a.client.Nodes().List(nil)
		if err != nil || len(nodes) != 1 {
			return nil
		}
		return nodes[0].Drivers["docker"]
	}
	waitFor(t, 20*time.Second, "docker healthy", func() bool { d := driver(); return d != nil && d.Healthy })

	if _, _, err := a.client.Jobs().Register(dockerJob("before", img), nil); err != nil {
		t.Fatal(err)
	}
	running := func(job string) bool {
		s := a.allocsOf(job)
		return len(s) > 0 && s[len(s)-1].ClientStatus == "running" && s[len(s)-1].TaskStates["t"] != nil && s[len(s)-1].TaskStates["t"].State == "running"
	}
	waitFor(t, 60*time.Second, "the first docker job running", func() bool { return running("before") })

	d.stop()
	waitFor(t, 60*time.Second, "the node reports docker unhealthy", func() bool {
		di := driver()
		return di != nil && !di.Healthy && strings.Contains(di.HealthDescription, "Failed to connect to docker daemon")
	})

	if _, _, err := a.client.Jobs().Register(dockerJob("during", img), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the new docker job queued, not placed", func() bool {
		s, _, err := a.client.Jobs().Summary("during", nil)
		return err == nil && s.Summary["g"].Queued == 1
	})
	if n := len(a.allocsOf("during")); n != 0 {
		t.Fatalf("%d allocations placed on a node whose docker is down", n)
	}

	d.start()
	waitFor(t, 60*time.Second, "docker healthy again", func() bool { d := driver(); return d != nil && d.Healthy })
	waitFor(t, 60*time.Second, "the queued job placed and running", func() bool { return running("during") })
	waitFor(t, 60*time.Second, "the first job running again", func() bool { return running("before") })
}

// logAllocs writes each allocation of the jobs with its task events (and
// the private dockerd's log tail) into the test log when the test failed:
// what a failed wait on a task needs to be understood.
func logAllocs(t *testing.T, a *agent, d *privateDockerd, jobs ...string) {
	if !t.Failed() {
		return
	}
	for _, job := range jobs {
		stubs, _, err := a.client.Jobs().Allocations(job, true, nil)
		if err != nil {
			t.Logf("allocations of %s: %v", job, err)
			continue
		}
		for _, s := range stubs {
			t.Logf("job %s alloc %s: desired %s, client %s (%s), modify index %d", job, s.ID, s.DesiredStatus, s.ClientStatus, s.ClientDescription, s.ModifyIndex)
			for name, ts := range s.TaskStates {
				t.Logf("  task %s: %s, failed %v, restarts %d", name, ts.State, ts.Failed, ts.Restarts)
				for _, e := range ts.Events {
					t.Logf("    %s %s: %s", time.Unix(0, e.Time).UTC().Format("15:04:05.000"), e.Type, e.DisplayMessage)
				}
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(d.dir, "dockerd.log")); err == nil {
		t.Logf("private dockerd log:\n%s", tail(string(b), 40))
	}
}
