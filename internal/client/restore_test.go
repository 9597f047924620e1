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
