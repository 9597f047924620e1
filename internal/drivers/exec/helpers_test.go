package exec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/isolate"
	"github.com/drover-project/drover/internal/structs"
)

// requireIsolation skips without root and cgroup v1, but fails in CI
// (GUIDE §4): a skip must never hide a broken driver there.
func requireIsolation(t *testing.T) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "not running as root"
	} else if fp := New(Config{}).Fingerprint(); fp.Health != drivers.HealthHealthy {
		why = fp.HealthDescription
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but the exec driver cannot run here: %s", why)
	}
	t.Skipf("exec driver unavailable: %s", why)
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// newTask lays out an allocation directory as the client does and returns
// a task config running command with args.
func newTask(t testing.TB, id string, config map[string]any) *drivers.TaskConfig {
	t.Helper()
	allocDir := filepath.Join(t.TempDir(), "alloc-"+id)
	taskDir := filepath.Join(allocDir, id)
	for _, d := range []struct {
		p    string
		mode os.FileMode
	}{
		{allocDir, 0o755}, {filepath.Join(allocDir, "alloc"), 0o755}, {filepath.Join(allocDir, "alloc", "data"), 0o777},
		{filepath.Join(allocDir, "alloc", "logs"), 0o777}, {taskDir, 0o777}, {filepath.Join(taskDir, "local"), 0o777},
		{filepath.Join(taskDir, "secrets"), 0o700}, {filepath.Join(taskDir, "tmp"), 0o777 | os.ModeSticky},
		{filepath.Join(taskDir, "private"), 0o700},
	} {
		if err := os.MkdirAll(d.p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d.p, d.mode); err != nil {
			t.Fatal(err)
		}
	}
	// The test's temp dirs are root's 0700: the task's user must reach its
	// dir. Only the test's own dirs: never the system temp dir itself (it
	// must stay 1777 for everyone else).
	for p := filepath.Dir(allocDir); p != "/" && p != os.TempDir() && strings.HasPrefix(p, os.TempDir()+string(filepath.Separator)); p = filepath.Dir(p) {
		_ = os.Chmod(p, 0o755)
	}
	allocID := uniqueID("alloc-" + id)
	return &drivers.TaskConfig{
		ID: allocID + "/" + id, AllocID: allocID, Name: id,
		Config: config, Env: map[string]string{"PATH": "/usr/bin:/bin", "NOMAD_TASK_DIR": filepath.Join(taskDir, "local")},
		TaskDir: taskDir, AllocDir: allocDir,
		StdoutPath: filepath.Join(allocDir, "alloc", "logs", id+".stdout"),
		StderrPath: filepath.Join(allocDir, "alloc", "logs", id+".stderr"),
		Resources: &structs.AllocatedTaskResources{Cpu: structs.AllocatedCpuResources{CpuShares: 100},
			Memory: structs.AllocatedMemoryResources{MemoryMB: 64}},
	}
}

func output(t *testing.T, tc *drivers.TaskConfig) (string, string) {
	t.Helper()
	o, _ := os.ReadFile(tc.StdoutPath)
	e, _ := os.ReadFile(tc.StderrPath)
	return string(o), string(e)
}

func waitExit(t *testing.T, d drivers.Driver, id string) *drivers.ExitResult {
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
		return nil
	}
}

func runToExit(t *testing.T, d *Driver, tc *drivers.TaskConfig) (*drivers.ExitResult, string, string) {
	t.Helper()
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	r := waitExit(t, d, tc.ID)
	out, errOut := output(t, tc)
	if err := d.DestroyTask(tc.ID, true); err != nil {
		t.Errorf("destroy: %v", err)
	}
	return r, out, errOut
}

func (*task) cgFor(t testing.TB, tc *drivers.TaskConfig) *isolate.Cgroups {
	cg, err := isolate.NewCgroups(isolate.CgroupName{Parent: tc.CgroupParent, Name: isolate.ContainerID(tc.ID)})
	if err != nil {
		t.Fatal(err)
	}
	return cg
}

// uniqueID makes name unique to this test run: a task ID names
// machine-wide cgroups (and container state), so two runs of this
// package's tests at once (a developer's and CI's) must never share one,
// or one run's start or stop kills the other's processes.
func uniqueID(name string) string {
	return fmt.Sprintf("%d-%d-%s", time.Now().UnixNano(), os.Getpid(), name)
}
