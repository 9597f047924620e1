package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
	"github.com/drover-project/drover/internal/structs"
	"github.com/drover-project/drover/internal/testport"
)

// These tests run containers on the local engine (skipped without one,
// failed in CI).

func engineDriver(t *testing.T) (*Driver, *client.Client, string) {
	t.Helper()
	cli := dockertest.Client(t)
	img := dockertest.BuildBusybox(t, cli)
	pc := DefaultPluginConfig()
	pc.GCImage = false // the test image is shared by every test
	return New(Config{Plugin: pc}), cli, img
}

func engineTask(t *testing.T, name string, conf map[string]any, memMB int64) *drivers.TaskConfig {
	t.Helper()
	allocDir := t.TempDir()
	taskDir := filepath.Join(allocDir, name)
	for _, d := range []string{filepath.Join(allocDir, "alloc"), filepath.Join(taskDir, "local"), filepath.Join(taskDir, "secrets")} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"stdout", "stderr"} {
		if err := os.WriteFile(filepath.Join(allocDir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	allocID := fmt.Sprintf("%d-%s", time.Now().UnixNano(), strings.ToLower(t.Name()))
	allocID = strings.NewReplacer("/", "-", "_", "-").Replace(allocID)
	return &drivers.TaskConfig{
		ID: allocID + "/" + name, AllocID: allocID, Name: name, JobID: "job", TaskGroupName: "g",
		Config:     conf,
		Env:        map[string]string{"GREETING": "hello from env"},
		AllocDir:   allocDir,
		TaskDir:    taskDir,
		StdoutPath: filepath.Join(allocDir, "stdout"),
		StderrPath: filepath.Join(allocDir, "stderr"),
		Resources: &structs.AllocatedTaskResources{
			Cpu:    structs.AllocatedCpuResources{CpuShares: 100},
			Memory: structs.AllocatedMemoryResources{MemoryMB: memMB},
		},
	}
}

func waitExit(t *testing.T, d *Driver, id string, within time.Duration) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	ch, err := d.WaitTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		t.Fatalf("task %s did not exit within %s", id, within)
	}
	return nil
}

func readFileEventually(t *testing.T, path, want string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never contained %q; it has %q", path, want, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeTCPPort(t *testing.T) int {
	p, err := testport.Take()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A container serves HTTP on the allocation's host port (published to its
// `to` port), writes to the task's log files, sees /alloc, /local and the
// task env, and stopping it kills it and destroying it removes it.
func TestEngineServeLogsStopRemove(t *testing.T) {
	d, cli, img := engineDriver(t)
	port := freeTCPPort(t)
	cfg := engineTask(t, "web", map[string]any{
		"image":   img,
		"command": "/bin/sh",
		"args": []any{"-c", `echo "$GREETING alloc=$NOMAD_ALLOC_DIR"; echo to-stderr >&2; ` +
			`echo served > /local/index.html; exec httpd -f -p 8080 -h /local`},
		"ports": []any{"http"},
	}, 64)
	cfg.Ports = structs.AllocatedPorts{{Label: "http", Value: port, To: 8080, HostIP: "127.0.0.1"}}
	h, err := d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	if h.State != drivers.TaskStateRunning || len(h.DriverState) == 0 {
		t.Fatalf("handle %+v", h)
	}
	readFileEventually(t, cfg.StdoutPath, "hello from env alloc=/alloc")
	readFileEventually(t, cfg.StderrPath, "to-stderr")

	var body string
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", port))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer on host port %d: %v %q", port, err, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.TrimSpace(body) != "served" {
		t.Fatalf("body %q", body)
	}
	if _, err := os.Stat(filepath.Join(cfg.TaskDir, "local", "index.html")); err != nil {
		t.Fatalf("/local is not the task's local dir: %v", err)
	}

	st, err := d.InspectTask(cfg.ID)
	if err != nil || st.State != drivers.TaskStateRunning || len(st.PIDs) != 1 || st.StartedAt.IsZero() {
		t.Fatalf("inspect %+v %v", st, err)
	}
	var ds driverState
	if err := jsonUnmarshal(h.DriverState, &ds); err != nil {
		t.Fatal(err)
	}

	if err := d.StopTask(cfg.ID, 2*time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	res := waitExit(t, d, cfg.ID, 10*time.Second)
	if res.Successful() {
		t.Fatalf("a stopped httpd should not exit successfully: %+v", res)
	}
	if err := d.DestroyTask(cfg.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerInspect(context.Background(), ds.ContainerID); !errdefs.IsNotFound(err) {
		t.Fatalf("container %s still exists after destroy: %v", shortID(ds.ContainerID), err)
	}
	if _, err := d.InspectTask(cfg.ID); err != drivers.ErrTaskNotFound {
		t.Fatalf("inspect after destroy: %v", err)
	}
}

// A container that goes over its memory limit is reported OOM killed.
func TestEngineOOMKilled(t *testing.T) {
	d, _, img := engineDriver(t)
	cfg := engineTask(t, "hog", map[string]any{
		"image": img, "command": "/bin/sh", "args": []any{"-c", "tail /dev/zero"},
	}, 16)
	if _, err := d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	res := waitExit(t, d, cfg.ID, 60*time.Second)
	if !res.OOMKilled || res.ExitCode != 137 {
		t.Fatalf("want OOM killed with exit code 137, got %+v", res)
	}
}

// The exit code of a container that ends by itself is reported.
func TestEngineExitCode(t *testing.T) {
	d, _, img := engineDriver(t)
	cfg := engineTask(t, "batch", map[string]any{
		"image": img, "entrypoint": []any{"/bin/sh", "-c"}, "args": []any{"echo done; exit 3"},
	}, 32)
	if _, err := d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	res := waitExit(t, d, cfg.ID, 30*time.Second)
	if res.ExitCode != 3 || res.OOMKilled {
		t.Fatalf("want exit 3, got %+v", res)
	}
	readFileEventually(t, cfg.StdoutPath, "done")
}

// A new driver (a restarted client) recovers the running container from the
// handle without restarting it, and can stop it.
func TestEngineRecover(t *testing.T) {
	d, cli, img := engineDriver(t)
	cfg := engineTask(t, "long", map[string]any{
		"image": img, "command": "/bin/sh", "args": []any{"-c", "echo started; exec sleep 300"},
	}, 32)
	h, err := d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ds driverState
	if err := jsonUnmarshal(h.DriverState, &ds); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cli.ContainerRemove(context.Background(), ds.ContainerID, container.RemoveOptions{Force: true})
	})
	before, err := cli.ContainerInspect(context.Background(), ds.ContainerID)
	if err != nil {
		t.Fatal(err)
	}

	d2 := New(Config{Plugin: d.cfg})
	if err := d2.RecoverTask(h); err != nil {
		t.Fatal(err)
	}
	after, err := cli.ContainerInspect(context.Background(), ds.ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	if !after.State.Running || after.State.StartedAt != before.State.StartedAt || after.RestartCount != before.RestartCount {
		t.Fatalf("recovery restarted the container: before %s, after %s running=%v", before.State.StartedAt, after.State.StartedAt, after.State.Running)
	}
	if st, err := d2.InspectTask(cfg.ID); err != nil || st.State != drivers.TaskStateRunning {
		t.Fatalf("recovered task: %+v %v", st, err)
	}
	// A handle stored before StartTask returned (no driver state) finds
	// the same container by its task label.
	d3 := New(Config{Plugin: d.cfg})
	if err := d3.RecoverTask(&drivers.TaskHandle{Config: cfg, State: "starting"}); err != nil {
		t.Fatal(err)
	}
	if h3, err := d3.get(cfg.ID); err != nil || h3.state.ContainerID != ds.ContainerID || !h3.state.StartedAt.Equal(ds.StartedAt) {
		t.Fatalf("recovered by label: %+v %v", h3, err)
	}

	if err := d2.StopTask(cfg.ID, 2*time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	waitExit(t, d2, cfg.ID, 20*time.Second)
	if err := d2.DestroyTask(cfg.ID, false); err != nil {
		t.Fatal(err)
	}

	// The exit is known to every driver that recovered the container.
	if r := waitExit(t, d3, cfg.ID, 10*time.Second); r.Successful() {
		t.Fatalf("a killed container exited successfully: %+v", r)
	}
	// A handle whose container is gone cannot be recovered.
	if err := New(Config{Plugin: d.cfg}).RecoverTask(h); err == nil {
		t.Fatal("recovering a removed container succeeded")
	}
	if err := New(Config{Plugin: d.cfg}).RecoverTask(&drivers.TaskHandle{Config: cfg, State: "starting"}); err == nil {
		t.Fatal("recovering by label found a removed container")
	}
}

// An image that is neither present nor pullable fails the start with the
// engine's reason, quickly (no registry is reachable here); the task's
// events said which image was being downloaded.
func TestEngineMissingImage(t *testing.T) {
	d, _, _ := engineDriver(t)
	cfg := engineTask(t, "x", map[string]any{"image": "127.0.0.1:1/drover/none:nope", "image_pull_timeout": "20s"}, 32)
	var events []string
	cfg.EmitEvent = func(msg string, details map[string]string) { events = append(events, msg+" "+details["image"]) }
	_, err := d.StartTask(cfg)
	if err == nil || !strings.Contains(err.Error(), `pull image "127.0.0.1:1/drover/none:nope"`) {
		t.Fatalf("want a pull error naming the image, got %v", err)
	}
	if len(events) != 1 || events[0] != "Downloading image 127.0.0.1:1/drover/none:nope" {
		t.Fatalf("driver events %q, want one Downloading image with the image", events)
	}
}

// Fingerprint against the real engine reports its version, runtimes and
// the default bridge's address (Docker 20.10 names no gateway for it).
func TestEngineFingerprint(t *testing.T) {
	d, _, _ := engineDriver(t)
	fp := d.Fingerprint()
	if fp.Health != drivers.HealthHealthy || fp.Attributes["driver.docker"] != "1" || fp.Attributes["driver.docker.version"] == "" ||
		fp.Attributes["driver.docker.runtimes"] == "" || net.ParseIP(fp.Attributes["driver.docker.bridge_ip"]) == nil {
		t.Fatalf("fingerprint %+v", fp)
	}
}

// Commands run inside a running container (output, exit code, stdin), and
// its CPU and memory use is sampled from the engine.
func TestEngineExecAndStats(t *testing.T) {
	d, _, img := engineDriver(t)
	cfg := engineTask(t, "busy", map[string]any{
		"image": img, "command": "/bin/sh", "args": []any{"-c", "while :; do :; done"},
	}, 32)
	cfg.CPUTotalCompute = 4000
	if _, err := d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })

	var out, errb strings.Builder
	code, err := d.ExecTask(context.Background(), cfg.ID, drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", "echo in-$GREETING; echo oops >&2; exit 4"}, Stdout: &out, Stderr: &errb,
	})
	if err != nil || code != 4 || out.String() != "in-hello from env\n" || errb.String() != "oops\n" {
		t.Fatalf("exec: code %d err %v stdout %q stderr %q", code, err, out.String(), errb.String())
	}
	out.Reset()
	code, err = d.ExecTask(context.Background(), cfg.ID, drivers.ExecOptions{
		Command: []string{"cat"}, Stdin: strings.NewReader("piped\n"), Stdout: &out,
	})
	if err != nil || code != 0 || out.String() != "piped\n" {
		t.Fatalf("exec with stdin: code %d err %v stdout %q", code, err, out.String())
	}
	// With a terminal, the command sees one (and its output is not
	// demultiplexed).
	out.Reset()
	code, err = d.ExecTask(context.Background(), cfg.ID, drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", "[ -t 1 ] && echo tty-yes"}, Tty: true, Stdout: &out,
	})
	if err != nil || code != 0 || !strings.Contains(out.String(), "tty-yes") {
		t.Fatalf("exec with a tty: code %d err %v stdout %q", code, err, out.String())
	}
	if _, err := d.ExecTask(context.Background(), "nope/x", drivers.ExecOptions{Command: []string{"true"}}); err != drivers.ErrTaskNotFound {
		t.Fatalf("exec in unknown task: %v", err)
	}

	deadline := time.Now().Add(30 * time.Second)
	for {
		u, err := d.TaskStats(context.Background(), cfg.ID)
		if err != nil {
			t.Fatal(err)
		}
		if u.Memory.Usage > 0 && u.CPU.Percent > 20 && u.CPU.TotalTicks > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a busy container's stats never showed its use: %+v", u)
		}
	}
}

// A container that ignores SIGTERM is killed after a kill_timeout longer
// than the bound of one engine call: the SIGKILL used to share the
// SIGTERM's deadline, which had run out during the wait, so it was never
// sent and the stop (and the task runner's wait behind it) hung while the
// container ran on. Here the call bound is 1 s and the kill_timeout 2 s
// (as 30 s and any kill_timeout of 30 s or more in production).
func TestEngineStopKillsAfterKillTimeoutLongerThanCallBound(t *testing.T) {
	d, cli, img := engineDriver(t)
	d.callTimeout = time.Second
	// PID 1 of a container without a SIGTERM handler ignores SIGTERM.
	cfg := engineTask(t, "deaf", map[string]any{"image": img, "command": "/bin/sleep", "args": []any{"600"}}, 32)
	th, err := d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	if err := d.StopTask(cfg.ID, 2*time.Second, "SIGTERM"); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if r := waitExit(t, d, cfg.ID, 10*time.Second); r.ExitCode != 137 {
		t.Fatalf("exit %+v, want 137 (SIGKILL)", r)
	}
	var ds driverState
	if err := json.Unmarshal(th.DriverState, &ds); err != nil {
		t.Fatal(err)
	}
	info, err := cli.ContainerInspect(context.Background(), ds.ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Running {
		t.Fatal("the container still runs after the stop returned")
	}
}

// signalWriter closes ready when what it is written contains want.
type signalWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	want  string
	ready chan struct{}
	once  sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

// An exec whose caller goes away (its context ends: the terminal closed)
// ends its command too. The engine does not: the command ran on in the
// container for good (a shell, `tail -f`).
func TestEngineExecCancelledEndsTheCommand(t *testing.T) {
	d, cli, img := engineDriver(t)
	cfg := engineTask(t, "idle", map[string]any{"image": img, "command": "/bin/sleep", "args": []any{"600"}}, 32)
	th, err := d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	var ds driverState
	if err := json.Unmarshal(th.DriverState, &ds); err != nil {
		t.Fatal(err)
	}
	for _, tty := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		out := &signalWriter{want: "started", ready: make(chan struct{})}
		ended := make(chan error, 1)
		go func() {
			_, err := d.ExecTask(ctx, cfg.ID, drivers.ExecOptions{
				Command: []string{"/bin/sh", "-c", "echo started; exec sleep 777"}, Tty: tty, Stdout: out,
			})
			ended <- err
		}()
		select {
		case <-out.ready:
		case <-time.After(30 * time.Second):
			t.Fatalf("tty %v: the exec never started", tty)
		}
		cancel()
		if err := <-ended; !errors.Is(err, context.Canceled) {
			t.Fatalf("tty %v: exec ended with %v, want context.Canceled", tty, err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			top, err := cli.ContainerTop(context.Background(), ds.ContainerID, nil)
			if err != nil {
				t.Fatal(err)
			}
			running := false
			for _, p := range top.Processes {
				if strings.Contains(strings.Join(p, " "), "sleep 777") {
					running = true
				}
			}
			if !running {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("tty %v: the cancelled exec's command still runs in the container: %v", tty, top.Processes)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
