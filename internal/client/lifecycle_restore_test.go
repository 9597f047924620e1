package client

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/go-hclog"
)

// A service allocation whose init prestart task completed keeps running
// across a client restart: the main task is re-attached and the prestart
// task, already dead with exit 0, is not run a second time.
func TestClient_RestoreKeepsCompletedPrestart(t *testing.T) {
	tc := newRestartableClient(t, "restore-node", hclog.Warn)
	dir, srv := tc.dir, tc.srv
	c1 := tc.Client

	sh := func(name, script string) *structs.Task {
		return &structs.Task{Name: name, Driver: "raw_exec", KillTimeout: time.Second, Config: map[string]any{
			"command": "/bin/sh", "args": []any{"-c", script}}}
	}
	init := sh("init", `echo ran >> "$NOMAD_ALLOC_DIR/init-runs"`)
	init.Lifecycle = &structs.TaskLifecycle{Hook: "prestart"}
	main := sh("main", `echo $$ > "$NOMAD_TASK_DIR/pid"; while :; do sleep 0.05; done`)
	a := testutil.Alloc(structs.JobTypeService, init, main)
	a.Job.TaskGroups[0].RestartPolicy.Attempts = 2
	a.NodeID = tc.NodeID()
	srv.upsertAlloc(a)
	// The allocation is running as soon as init runs: wait for main's
	// start to reach the servers, so the client stops after recording it
	// (a start it never recorded is TestRestoredStartingTaskIsReportedRunning's).
	testutil.WaitFor(t, 10*time.Second, func() error {
		got := srv.alloc(a.ID)
		if got == nil || got.TaskStates["main"] == nil || got.TaskStates["main"].State != structs.TaskStateRunning {
			return testutil.Errorf("main not running on the servers yet: %+v", got)
		}
		return nil
	})
	var pid int
	testutil.WaitFor(t, 10*time.Second, func() error {
		b, err := os.ReadFile(filepath.Join(dir, "alloc", a.ID, "main", "local", "pid"))
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if pid == 0 {
			return testutil.Errorf("no pid yet: %v", err)
		}
		return nil
	})
	if err := c1.Shutdown(); err != nil {
		t.Fatal(err)
	}

	pendingBefore := srv.updatesSent(a.ID, structs.AllocClientStatusPending)
	runningBefore := srv.updatesSent(a.ID, structs.AllocClientStatusRunning)
	c2 := tc.restart()
	ar, err := c2.getAllocRunner(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		if st := ar.TaskState("main"); st == nil || st.State != structs.TaskStateRunning {
			return testutil.Errorf("main state %+v", st)
		}
		return nil
	})
	if !alive(pid) {
		t.Fatal("main task did not survive the client restart")
	}
	if st := ar.TaskState("init"); st.State != structs.TaskStateDead || st.Failed || st.Restarts != 0 {
		t.Fatalf("init state %s failed %v restarts %d", st.State, st.Failed, st.Restarts)
	}
	b, err := os.ReadFile(filepath.Join(dir, "alloc", a.ID, "alloc", "init-runs"))
	if err != nil || string(b) != "ran\n" {
		t.Fatalf("init ran %q (%v), want once", b, err)
	}
	// What the restored client reports (in its next batch): running, and
	// never pending meanwhile.
	testutil.WaitFor(t, 10*time.Second, func() error {
		if srv.updatesSent(a.ID, structs.AllocClientStatusRunning) == runningBefore {
			return testutil.Errorf("the restored client has not reported the allocation yet")
		}
		return nil
	})
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	if n := srv.updatesSent(a.ID, structs.AllocClientStatusPending); n != pendingBefore {
		t.Fatalf("the restored client reported the allocation pending %d times", n-pendingBefore)
	}
}
