package taskrunner

import (
	"sync"
	"testing"
	"time"

	"fmt"
	"github.com/drover-project/drover/internal/client/state"
	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
	"os"
	"path/filepath"
)

// memDB records what a runner persists.
type memDB struct {
	mu    sync.Mutex
	state *structs.TaskState
	local *state.LocalTaskState
}

func (m *memDB) PutTaskState(_, _ string, s *structs.TaskState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state = s
	return nil
}

func (m *memDB) PutTaskLocalState(_, _ string, s *state.LocalTaskState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *s
	m.local = &c
	return nil
}

func (m *memDB) handle() *drivers.TaskHandle {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.local == nil {
		return nil
	}
	return m.local.Handle
}

// The driver's handle is stored before the task is reported running, and
// cleared once the task is gone; the stored state follows every change.
func TestHandlePersistedBeforeRunning(t *testing.T) {
	db := &memDB{}
	task := testutil.MockTask("web", map[string]any{"run_for": "200ms"})
	alloc := testutil.Alloc(structs.JobTypeBatch, task)
	var mu sync.Mutex
	var sawRunningWithout bool
	var tr *TaskRunner
	tr = New(Config{Alloc: alloc, Task: task, Driver: mock.New(), StateDB: db, OnStateChange: func() {
		if tr.State().State == structs.TaskStateRunning {
			if h := db.handle(); h == nil || h.State != drivers.TaskStateRunning {
				mu.Lock()
				sawRunningWithout = true
				mu.Unlock()
			}
		}
	}})
	go tr.Run()
	select {
	case <-tr.WaitCh():
	case <-time.After(10 * time.Second):
		t.Fatal("task did not finish")
	}
	mu.Lock()
	defer mu.Unlock()
	if sawRunningWithout {
		t.Fatal("task reported running before its handle was stored")
	}
	if db.handle() != nil {
		t.Fatal("handle of a finished task still stored")
	}
	// The last state is persisted by the runner's exit path, which may
	// still be running when WaitCh closes.
	deadline := time.Now().Add(10 * time.Second)
	for {
		db.mu.Lock()
		st := db.state
		db.mu.Unlock()
		if st != nil && st.State == structs.TaskStateDead {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stored state %+v, want dead", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A restored runner whose task had ended for good does not start it again.
func TestRestoredDeadTaskStaysDead(t *testing.T) {
	drv := mock.New()
	task := testutil.MockTask("web", map[string]any{"run_for": "1h"})
	alloc := testutil.Alloc(structs.JobTypeService, task)
	tr := New(Config{Alloc: alloc, Task: task, Driver: drv, StateDB: &memDB{}})
	tr.Restore(&structs.TaskState{State: structs.TaskStateDead, FinishedAt: time.Now()}, &state.LocalTaskState{})
	go tr.Run()
	select {
	case <-tr.WaitCh():
	case <-time.After(10 * time.Second):
		t.Fatal("restored dead task runner did not return")
	}
	if n := drv.StartCount("web"); n != 0 {
		t.Fatalf("restored dead task started %d times", n)
	}
}

// A task the previous client started but never recorded as started (it
// stopped between the driver's start and the Started event, with only the
// "starting" handle stored) is re-attached and reported running. Before,
// a re-attached task kept its restored state, so this one stayed pending
// for good while it ran (its allocation pending, its deployment never
// healthy): CI-like load caught it in TestClient_RestoreKeepsCompletedPrestart.
func TestRestoredStartingTaskIsReportedRunning(t *testing.T) {
	drv := mock.New()
	task := testutil.MockTask("web", map[string]any{"run_for": "-1s"})
	alloc := testutil.Alloc(structs.JobTypeService, task)
	tc := &drivers.TaskConfig{ID: alloc.ID + "/web", AllocID: alloc.ID, Name: "web", Config: task.Config}
	if _, err := drv.StartTask(tc); err != nil { // the previous client's start
		t.Fatal(err)
	}
	tr := New(Config{Alloc: alloc, Task: task, Driver: drv, StateDB: &memDB{}})
	tr.Restore(&structs.TaskState{State: structs.TaskStatePending, Events: []*structs.TaskEvent{
		{Type: structs.TaskReceived}, {Type: structs.TaskSetup}}},
		&state.LocalTaskState{Handle: &drivers.TaskHandle{Config: tc, State: drivers.TaskStateStarting}})
	go tr.Run()
	t.Cleanup(func() { tr.Kill("test"); <-tr.WaitCh() })
	testutil.WaitFor(t, 10*time.Second, func() error {
		st := tr.State()
		started := false
		for _, e := range st.Events {
			started = started || e.Type == structs.TaskStarted
		}
		if st.State != structs.TaskStateRunning || st.StartedAt.IsZero() || !started {
			return testutil.Errorf("state %s, started at %s, Started event %v: want running", st.State, st.StartedAt, started)
		}
		return nil
	})
	if n := drv.StartCount("web"); n != 1 {
		t.Fatalf("the task was started %d times, want only the previous client's start", n)
	}
}

// A restart the policy scheduled before the client stopped is counted once
// the restored client starts the task again. The count was raised only
// after the delay, by the process that waited: a client stopped during the
// delay lost it, so `alloc status` showed "Total Restarts = 0" beside two
// Restarting events, and Restarts stayed one short of the restarts made.
func TestRestartScheduledBeforeClientStopIsCounted(t *testing.T) {
	drv := mock.New()
	task := testutil.MockTask("web", map[string]any{"run_for": "10ms", "exit_code": 3})
	alloc := testutil.Alloc(structs.JobTypeService, task)
	alloc.Job.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 3, Interval: time.Hour, Delay: time.Hour, Mode: structs.RestartPolicyModeFail}
	db := &memDB{}
	first := New(Config{Alloc: alloc, Task: task, Driver: drv, StateDB: db})
	go first.Run()
	testutil.WaitFor(t, 10*time.Second, func() error {
		db.mu.Lock()
		defer db.mu.Unlock()
		if db.state == nil || len(db.state.Events) == 0 || db.state.Events[len(db.state.Events)-1].Type != structs.TaskRestarting {
			return testutil.Errorf("stored state %+v: want a scheduled restart", db.state)
		}
		return nil
	})
	// The client dies in the delay: what it stored is all a new one has.
	db.mu.Lock()
	ts, ls := copyState(db.state), *db.local
	db.mu.Unlock()
	first.Detach()
	<-first.WaitCh()

	// This time the task keeps running, so the count is read after
	// exactly one restart.
	task.Config = map[string]any{"run_for": "1h"}
	second := New(Config{Alloc: alloc, Task: task, Driver: drv, StateDB: &memDB{}})
	second.Restore(ts, &ls)
	go second.Run()
	t.Cleanup(func() { second.Kill("test"); <-second.WaitCh() })
	testutil.WaitFor(t, 10*time.Second, func() error {
		if n := drv.StartCount("web"); n < 2 {
			return testutil.Errorf("started %d times, want the restart", n)
		}
		return nil
	})
	if st := second.State(); st.Restarts != 1 || st.LastRestart.IsZero() {
		t.Fatalf("after one restart: Restarts %d, LastRestart %s; want 1 and its time", st.Restarts, st.LastRestart)
	}
}

// A re-attached task's workload identities are fetched and renewed again,
// as at a start. Before, only a started task got them: after a client
// restart a TTL'd identity file was never rewritten (the task read an
// expired token for good) and the Task API answered without the task's
// identity.
func TestRestoredTaskIdentitiesAreRenewed(t *testing.T) {
	drv := mock.New()
	task := testutil.MockTask("web", map[string]any{"run_for": "1h"})
	task.Identities = []*structs.WorkloadIdentity{{Name: "short", Audience: []string{"svc"}, File: true, TTL: 2 * time.Second}}
	alloc := testutil.Alloc(structs.JobTypeService, task)
	tc := &drivers.TaskConfig{ID: alloc.ID + "/web", AllocID: alloc.ID, Name: "web", Config: task.Config}
	if _, err := drv.StartTask(tc); err != nil { // the previous client's start
		t.Fatal(err)
	}
	taskDir := t.TempDir()
	var mu sync.Mutex
	signed := 0
	sign := func(allocID string) ([]*structs.SignedWorkloadIdentity, error) {
		mu.Lock()
		defer mu.Unlock()
		signed++
		return []*structs.SignedWorkloadIdentity{{TaskName: "web", IdentityName: "short",
			JWT: fmt.Sprintf("jwt-%d", signed), Expiration: time.Now().Add(2 * time.Second).UnixNano()}}, nil
	}
	tr := New(Config{Alloc: alloc, Task: task, Driver: drv, StateDB: &memDB{}, TaskDir: taskDir, SignIdentities: sign})
	tr.Restore(&structs.TaskState{State: structs.TaskStateRunning, StartedAt: time.Now().Add(-time.Minute)},
		&state.LocalTaskState{Handle: &drivers.TaskHandle{Config: tc, State: drivers.TaskStateRunning}})
	go tr.Run()
	t.Cleanup(func() { tr.Kill("test"); <-tr.WaitCh() })

	file := filepath.Join(taskDir, "secrets", "nomad_short.jwt")
	testutil.WaitFor(t, 20*time.Second, func() error {
		b, err := os.ReadFile(file)
		if err != nil {
			return testutil.Errorf("identity file: %v", err)
		}
		mu.Lock()
		n := signed
		mu.Unlock()
		if n < 2 || string(b) != fmt.Sprintf("jwt-%d", n) {
			return testutil.Errorf("identity file %q after %d signings: want it rewritten with each renewal", b, n)
		}
		return nil
	})
	if n := drv.StartCount("web"); n != 1 {
		t.Fatalf("the task was started %d times, want only the previous client's start", n)
	}
}
