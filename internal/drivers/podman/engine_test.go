package podman

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/docker"
	"github.com/drover-project/drover/internal/drivers/podman/podmantest"
	"github.com/drover-project/drover/internal/structs"
	"github.com/drover-project/drover/internal/testport"
)

// These tests run containers on the local podman API service (skipped
// without one, failed in CI).

func engineDriver(t *testing.T) (*docker.Driver, *client.Client, string) {
	t.Helper()
	cli := podmantest.Client(t)
	img := podmantest.LoadImage(t, cli)
	return New(Config{Plugin: DefaultPluginConfig()}), cli, img
}

func engineTask(t *testing.T, name string, conf map[string]any) *drivers.TaskConfig {
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
	allocID := strings.NewReplacer("/", "-", "_", "-").Replace(fmt.Sprintf("%d-%s", time.Now().UnixNano(), strings.ToLower(t.Name())))
	return &drivers.TaskConfig{
		ID: allocID + "/" + name, AllocID: allocID, Name: name, JobID: "job", TaskGroupName: "g",
		Config: conf, Env: map[string]string{"GREETING": "hello from env"},
		AllocDir: allocDir, TaskDir: taskDir,
		StdoutPath: filepath.Join(allocDir, "stdout"), StderrPath: filepath.Join(allocDir, "stderr"),
		Resources: &structs.AllocatedTaskResources{
			Cpu:    structs.AllocatedCpuResources{CpuShares: 100},
			Memory: structs.AllocatedMemoryResources{MemoryMB: 32},
		},
		CPUTotalCompute: 4000,
	}
}

func containerID(t *testing.T, h *drivers.TaskHandle) string {
	t.Helper()
	var ds struct{ ContainerID string }
	if err := json.Unmarshal(h.DriverState, &ds); err != nil || ds.ContainerID == "" {
		t.Fatalf("driver state %s: %v", h.DriverState, err)
	}
	return ds.ContainerID
}

func waitExit(t *testing.T, d *docker.Driver, id string) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := d.WaitTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		return r
	case <-ctx.Done():
		t.Fatalf("task %s did not exit", id)
	}
	return nil
}

func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func fileHas(path, want string) func() bool {
	return func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), want)
	}
}

// A podman container serves HTTP on the allocation's host port, its output
// reaches the task's log files, exec runs in it with the task's env, the
// service samples its use, and stop then destroy remove it.
func TestPodmanServeLogsExecStatsStop(t *testing.T) {
	d, cli, img := engineDriver(t)
	port, err := testport.Take()
	if err != nil {
		t.Fatal(err)
	}
	cfg := engineTask(t, "web", map[string]any{
		"image":   img,
		"command": "/bin/sh",
		"args": []any{"-c", `echo "$GREETING alloc=$NOMAD_ALLOC_DIR"; echo to-stderr >&2; ` +
			`echo served > /local/index.html; (while :; do :; done) & exec httpd -f -p 8080 -h /local`},
		"ports":       []any{"http"},
		"working_dir": "/local",
	})
	cfg.Ports = structs.AllocatedPorts{{Label: "http", Value: port, To: 8080, HostIP: "127.0.0.1"}}
	h, err := d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	id := containerID(t, h)
	eventually(t, "stdout in the log file", fileHas(cfg.StdoutPath, "hello from env alloc=/alloc"))
	eventually(t, "stderr in the log file", fileHas(cfg.StderrPath, "to-stderr"))
	eventually(t, "an answer on the host port", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", port))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == 200 && strings.TrimSpace(string(b)) == "served"
	})

	var out, errb strings.Builder
	code, err := d.ExecTask(context.Background(), cfg.ID, drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", "echo in-$GREETING; pwd; echo oops >&2; exit 4"}, Stdout: &out, Stderr: &errb,
	})
	if err != nil || code != 4 || out.String() != "in-hello from env\n/local\n" || errb.String() != "oops\n" {
		t.Fatalf("exec: code %d err %v stdout %q stderr %q", code, err, out.String(), errb.String())
	}
	eventually(t, "stats showing the busy loop", func() bool {
		u, err := d.TaskStats(context.Background(), cfg.ID)
		return err == nil && u.Memory.Usage > 0 && u.CPU.Percent > 20 && u.CPU.TotalTicks > 0
	})

	if err := d.StopTask(cfg.ID, 2*time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	if res := waitExit(t, d, cfg.ID); res.Successful() {
		t.Fatalf("a stopped httpd exited successfully: %+v", res)
	}
	if err := d.DestroyTask(cfg.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerInspect(context.Background(), id); !errdefs.IsNotFound(err) {
		t.Fatalf("container %s still exists after destroy: %v", id, err)
	}
}

// A new driver (the agent restarted) re-attaches to the running container
// without restarting it.
func TestPodmanRecover(t *testing.T) {
	d, cli, img := engineDriver(t)
	cfg := engineTask(t, "long", map[string]any{"image": img, "command": "/bin/sh", "args": []any{"-c", "echo started; exec sleep 300"}})
	h, err := d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	id := containerID(t, h)
	t.Cleanup(func() { _ = cli.ContainerRemove(context.Background(), id, container.RemoveOptions{Force: true}) })
	before, err := cli.ContainerInspect(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	d2 := New(Config{Plugin: DefaultPluginConfig()})
	if err := d2.RecoverTask(h); err != nil {
		t.Fatal(err)
	}
	after, err := cli.ContainerInspect(context.Background(), id)
	if err != nil || !after.State.Running || after.State.StartedAt != before.State.StartedAt {
		t.Fatalf("recovery restarted the container: before %s, after %+v %v", before.State.StartedAt, after.State, err)
	}
	if err := d2.StopTask(cfg.ID, time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	waitExit(t, d2, cfg.ID)
	if err := d2.DestroyTask(cfg.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerInspect(context.Background(), id); !errdefs.IsNotFound(err) {
		t.Fatalf("container %s still exists after destroy: %v", id, err)
	}
}

// image = "docker-archive:<tarball>" loads the image from the task dir
// (where an artifact puts it) and runs the image the archive names; a
// reserved core becomes the container's cpuset.
func TestPodmanArchiveImageAndCores(t *testing.T) {
	cli := podmantest.Client(t)
	d := New(Config{Plugin: DefaultPluginConfig()})
	cfg := engineTask(t, "arch", map[string]any{"image": "docker-archive:img.tar", "command": "/bin/sh", "args": []any{"-c", "echo from-archive; cat /sys/fs/cgroup/cpuset/cpuset.cpus 2>/dev/null || cat /sys/fs/cgroup/cpuset.cpus.effective; sleep 300"}})
	if err := os.WriteFile(filepath.Join(cfg.TaskDir, "local", "img.tar"), podmantest.Archive(t), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Resources.Cpu.ReservedCores = []uint16{1}
	h, err := d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	eventually(t, "the archive's image running", fileHas(cfg.StdoutPath, "from-archive"))
	info, err := cli.ContainerInspect(context.Background(), containerID(t, h))
	if err != nil {
		t.Fatal(err)
	}
	if info.HostConfig.CpusetCpus != "1" {
		t.Fatalf("cpuset %q, want the reserved core 1", info.HostConfig.CpusetCpus)
	}
	eventually(t, "the container confined to core 1", fileHas(cfg.StdoutPath, "from-archive\n1\n"))
}

// The fingerprint names podman, its version and that it runs rootful.
func TestPodmanFingerprint(t *testing.T) {
	podmantest.Client(t)
	fp := New(Config{Plugin: DefaultPluginConfig()}).Fingerprint()
	a := fp.Attributes
	if fp.Health != drivers.HealthHealthy || a["driver.podman"] != "1" || a["driver.podman.version"] == "" ||
		a["driver.podman.rootless"] != "false" || a["driver.podman.cgroupVersion"] == "" {
		t.Fatalf("fingerprint %+v", fp)
	}
	if _, ok := a["driver.docker"]; ok {
		t.Fatalf("podman fingerprints as docker: %v", a)
	}
	// A socket nobody serves: undetected, and the node says where it looked.
	pc := DefaultPluginConfig()
	pc.Endpoint = "unix://" + filepath.Join(t.TempDir(), "none.sock")
	fp = New(Config{Plugin: pc}).Fingerprint()
	if fp.Health != drivers.HealthUndetected || !strings.Contains(fp.HealthDescription, "podman API service at "+pc.Endpoint) {
		t.Fatalf("fingerprint without a service: %+v", fp)
	}
}

// A container over its memory limit is reported OOM killed (from the
// kernel's record: podman 4.3 does not flag it itself).
func TestPodmanOOMKilled(t *testing.T) {
	d, _, img := engineDriver(t)
	cfg := engineTask(t, "hog", map[string]any{"image": img, "command": "/bin/sh", "args": []any{"-c", "tail /dev/zero"}})
	cfg.Resources.Memory.MemoryMB = 16
	if _, err := d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	if res := waitExit(t, d, cfg.ID); !res.OOMKilled || res.ExitCode != 137 {
		t.Fatalf("want OOM killed with exit code 137, got %+v", res)
	}
	// A container killed by a signal it was sent is not.
	cfg2 := engineTask(t, "sleeper", map[string]any{"image": img, "command": "/bin/sleep", "args": []any{"300"}})
	if _, err := d.StartTask(cfg2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg2.ID, true) })
	if err := d.StopTask(cfg2.ID, 0, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	if res := waitExit(t, d, cfg2.ID); res.OOMKilled || res.ExitCode != 137 {
		t.Fatalf("a killed container: want exit 137 without OOM, got %+v", res)
	}
}
