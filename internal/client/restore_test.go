package client

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/rawexec"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/go-hclog"
)

// A non-dev client that shuts down leaves its raw_exec tasks running; the
// next client process on the same data dir restores every allocation from
// its state before pulling: a running task is re-attached (same process,
// no restart, no second copy), a task that exited while no client ran is
// reported with its real exit code, and an allocation the servers stopped
// meanwhile is stopped. Leave then stops everything.
func TestClient_RestoreReattachesAndReportsExits(t *testing.T) {
	tc := newRestartableClient(t, "restore-node", hclog.Warn)
	dir, srv := tc.dir, tc.srv
	c1 := tc.Client

	task := func(name, script string) *structs.Task {
		return &structs.Task{Name: name, Driver: "raw_exec", KillTimeout: time.Second, Config: map[string]any{
			"command": "/bin/sh", "args": []any{"-c", `echo $$ > "$NOMAD_TASK_DIR/pid"; ` + script}}}
	}
	loop := `while :; do sleep 0.05; done`
	keep := tc.place(structs.JobTypeService, task("keep", loop))
	exits := tc.place(structs.JobTypeBatch, task("exits", `while [ ! -f "$NOMAD_TASK_DIR/go" ]; do sleep 0.05; done; exit 7`))
	stopped := tc.place(structs.JobTypeService, task("stopped", loop))
	for _, a := range []*structs.Allocation{keep, exits, stopped} {
		tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	}
	pidOf := func(a *structs.Allocation, task string) int {
		var pid int
		testutil.WaitFor(t, 10*time.Second, func() error {
			b, err := os.ReadFile(filepath.Join(dir, "alloc", a.ID, task, "local", "pid"))
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			if pid == 0 {
				return testutil.Errorf("no pid for %s yet: %v", task, err)
			}
			return nil
		})
		return pid
	}
	keepPID, exitsPID, stoppedPID := pidOf(keep, "keep"), pidOf(exits, "exits"), pidOf(stopped, "stopped")

	if err := c1.Shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{keepPID, exitsPID, stoppedPID} {
		if !alive(pid) {
			t.Fatalf("task %d did not survive the client's shutdown", pid)
		}
	}
	// While no client runs: one task exits, one allocation is stopped.
	if err := os.WriteFile(filepath.Join(dir, "alloc", exits.ID, "exits", "local", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		if alive(exitsPID) {
			return testutil.Errorf("task still running")
		}
		return nil
	})
	srv.stopAlloc(stopped.ID)

	c2 := tc.restart()
	got := tc.waitServerStatus(t, exits.ID, structs.AllocClientStatusFailed)
	var term *structs.TaskEvent
	for _, ev := range got.TaskStates["exits"].Events {
		if ev.Type == structs.TaskTerminated {
			term = ev
		}
	}
	if term == nil || term.ExitCode != 7 {
		t.Fatalf("exit during the outage not reported with its code: %+v", got.TaskStates["exits"].Events)
	}
	tc.waitServerStatus(t, stopped.ID, structs.AllocClientStatusComplete)
	if alive(stoppedPID) {
		t.Fatal("allocation stopped during the outage still runs")
	}
	if !alive(keepPID) {
		t.Fatal("re-attached task died")
	}
	ar, err := c2.getAllocRunner(keep.ID)
	if err != nil {
		t.Fatal(err)
	}
	st := ar.TaskState("keep")
	started := 0
	for _, ev := range st.Events {
		if ev.Type == structs.TaskStarted {
			started++
		}
	}
	if st.State != structs.TaskStateRunning || st.Restarts != 0 || started != 1 {
		t.Fatalf("re-attached task: state %s, %d restarts, %d Started events", st.State, st.Restarts, started)
	}
	if n := countProcsWithEnv("sh", "NOMAD_ALLOC_ID="+keep.ID); n != 1 {
		t.Fatalf("%d shells run allocation %s, want 1", n, keep.ID)
	}

	c2.Leave()
	if alive(keepPID) {
		t.Fatal("task still running after the client left")
	}
	tc.waitServerStatus(t, keep.ID, structs.AllocClientStatusComplete)
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && syscall.Kill(pid, 0) == nil
}

// countProcsWithEnv counts live processes named comm whose environment
// holds kv (only a task's processes have its NOMAD_ALLOC_ID).
func countProcsWithEnv(comm, kv string) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		if c, _ := os.ReadFile("/proc/" + e.Name() + "/comm"); strings.TrimSpace(string(c)) != comm {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		for _, v := range strings.Split(string(b), "\x00") {
			if v == kv {
				n++
				break
			}
		}
	}
	return n
}

// undetected is a driver whose fingerprint says it is not there (an engine
// down as the agent starts) while it still reaches its tasks.
type undetected struct{ drivers.Driver }

func (undetected) Fingerprint() *drivers.Fingerprint {
	return &drivers.Fingerprint{Attributes: map[string]string{}, Health: drivers.HealthUndetected, HealthDescription: "engine not reachable"}
}

// A client that restarts while its task's driver is not detected still
// tries the task's recovery: the task is re-attached, not failed at once
// as "driver not available" while its process ran on untracked beside the
// replacement the servers would place.
func TestClient_RestoreWithUndetectedDriverReattaches(t *testing.T) {
	tc := newRestartableClient(t, "restore-undetected", hclog.Warn)
	task := &structs.Task{Name: "keep", Driver: "raw_exec", KillTimeout: time.Second, Config: map[string]any{
		"command": "/bin/sh", "args": []any{"-c", `echo $$ > "$NOMAD_TASK_DIR/pid"; while :; do sleep 0.05; done`}}}
	keep := tc.place(structs.JobTypeService, task)
	tc.waitServerStatus(t, keep.ID, structs.AllocClientStatusRunning)
	var pid int
	testutil.WaitFor(t, 10*time.Second, func() error {
		b, err := os.ReadFile(filepath.Join(tc.dir, "alloc", keep.ID, "keep", "local", "pid"))
		if pid, _ = strconv.Atoi(strings.TrimSpace(string(b))); pid == 0 {
			return testutil.Errorf("no pid yet: %v", err)
		}
		return nil
	})
	// A failed run must not leave the task behind (its supervisor ends
	// with it).
	t.Cleanup(func() {
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if err := tc.Client.Shutdown(); err != nil {
		t.Fatal(err)
	}

	var d2 *rawexec.Driver
	tc.driver = func() drivers.Driver {
		d2 = rawexec.New(rawexec.Config{Enabled: true})
		return undetected{d2}
	}
	c2 := tc.restart()
	tc.waitReady(t)
	// The new driver holds the task once its recovery ran (never, before:
	// the task failed without it).
	testutil.WaitFor(t, 20*time.Second, func() error {
		_, err := d2.InspectTask(keep.ID + "/keep")
		return err
	})
	ar, err := c2.getAllocRunner(keep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st := ar.TaskState("keep"); st.State != structs.TaskStateRunning || st.Failed || st.Restarts != 0 {
		t.Fatalf("restored task: state %s, failed %v, %d restarts; events %+v", st.State, st.Failed, st.Restarts, st.Events)
	}
	if !alive(pid) {
		t.Fatal("the task's process died")
	}
	if n := countProcsWithEnv("sh", "NOMAD_ALLOC_ID="+keep.ID); n != 1 {
		t.Fatalf("%d shells run allocation %s, want 1", n, keep.ID)
	}
}

// An allocation the servers garbage collected whose directory could not
// be removed (here: something mounted in it) stays in the client's state,
// so the next client process destroys it again. Before, it was deleted
// from the state all the same and its directory stayed for good.
func TestClient_FailedDestroyOfCollectedAllocIsRetriedAfterRestart(t *testing.T) {
	tc := newRestartableClient(t, "restore-gc-retry", hclog.Warn)
	task := &structs.Task{Name: "t", Driver: "raw_exec", KillTimeout: time.Second, Config: map[string]any{
		"command": "/bin/sh", "args": []any{"-c", "exit 0"}}}
	a := tc.place(structs.JobTypeBatch, task)
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusComplete)
	allocDir := filepath.Join(tc.dir, "alloc", a.ID)
	busy := filepath.Join(allocDir, "busy")
	if err := os.Mkdir(busy, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(t.TempDir(), busy, "", syscall.MS_BIND, ""); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: cannot bind mount: %v", err)
		}
		t.Skipf("cannot bind mount (needs root): %v", err)
	}
	mounted := true
	t.Cleanup(func() {
		if mounted {
			_ = syscall.Unmount(busy, 0)
		}
	})

	tc.srv.gcAlloc(a.ID)
	// The destroy ran (everything but the mount point is gone) and failed.
	testutil.WaitFor(t, 20*time.Second, func() error {
		ents, err := os.ReadDir(allocDir)
		if err != nil || len(ents) != 1 {
			return testutil.Errorf("alloc dir holds %v (%v)", ents, err)
		}
		if _, err := tc.getAllocRunner(a.ID); err == nil {
			return testutil.Errorf("runner still present")
		}
		return nil
	})
	if err := tc.Client.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Unmount(busy, 0); err != nil {
		t.Fatal(err)
	}
	mounted = false

	tc.restart()
	testutil.WaitFor(t, 20*time.Second, func() error {
		if _, err := os.Stat(allocDir); !os.IsNotExist(err) {
			return testutil.Errorf("the collected allocation's directory is still there (%v)", err)
		}
		return nil
	})
}
