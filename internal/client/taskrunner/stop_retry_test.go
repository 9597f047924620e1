package taskrunner

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

// deafDriver fails its first `fail` stops without stopping anything, as a
// container engine that is down or does not answer.
type deafDriver struct {
	*mock.Driver
	mu    sync.Mutex
	fail  int
	stops []string // the signal of each stop asked for
}

func (d *deafDriver) StopTask(id string, timeout time.Duration, signal string) error {
	d.mu.Lock()
	d.stops = append(d.stops, signal)
	failing := len(d.stops) <= d.fail
	d.mu.Unlock()
	if failing {
		return errors.New("cannot connect to the engine")
	}
	return d.Driver.StopTask(id, timeout, signal)
}

func (d *deafDriver) stopCalls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.stops...)
}

func startDeaf(t *testing.T, fail int) (*TaskRunner, *deafDriver) {
	t.Helper()
	drv := &deafDriver{Driver: mock.New(), fail: fail}
	task := testutil.MockTask("web", map[string]any{"run_for": "1h"})
	alloc := testutil.Alloc(structs.JobTypeService, task)
	tr := New(Config{Alloc: alloc, Task: task, Driver: drv, StateDB: &memDB{}})
	go tr.Run()
	deadline := time.Now().Add(10 * time.Second)
	for tr.State().State != structs.TaskStateRunning {
		if time.Now().After(deadline) {
			t.Fatal("task never running")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return tr, drv
}

// A kill whose stop the driver failed is tried again (SIGKILL) until the
// task exits. Before, the runner waited for an exit nobody brought about:
// the task ran on and its allocation never stopped.
func TestKillRetriesAFailedStop(t *testing.T) {
	tr, drv := startDeaf(t, 2)
	tr.Kill("test")
	select {
	case <-tr.WaitCh():
	case <-time.After(30 * time.Second):
		t.Fatalf("task not stopped; stops asked: %q", drv.stopCalls())
	}
	if st := tr.State(); st.State != structs.TaskStateDead {
		t.Fatalf("state %s, want dead", st.State)
	}
	if got := drv.stopCalls(); len(got) != 3 || got[1] != "SIGKILL" || got[2] != "SIGKILL" {
		t.Fatalf("stops asked %q: want the kill signal, then SIGKILL until one works", got)
	}
}

// The same for an in-place restart: the task is stopped (after retries)
// and started again.
func TestRestartRetriesAFailedStop(t *testing.T) {
	tr, drv := startDeaf(t, 1)
	if err := tr.Restart("", 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for drv.StartCount("web") < 2 || tr.State().State != structs.TaskStateRunning {
		if time.Now().After(deadline) {
			t.Fatalf("task not restarted (starts %d, state %s); stops asked: %q", drv.StartCount("web"), tr.State().State, drv.stopCalls())
		}
		time.Sleep(10 * time.Millisecond)
	}
	tr.Kill("test")
	<-tr.WaitCh()
}

// A client detaching while a failed stop is being retried stops waiting at
// once and leaves the task to the next client (not destroyed).
func TestDetachEndsAFailedStopsWait(t *testing.T) {
	tr, drv := startDeaf(t, 1000)
	tr.Kill("test")
	deadline := time.Now().Add(10 * time.Second)
	for len(drv.stopCalls()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no stop asked")
		}
		time.Sleep(5 * time.Millisecond)
	}
	tr.Detach()
	select {
	case <-tr.WaitCh():
	case <-time.After(10 * time.Second):
		t.Fatal("a detached runner still waits for a task its driver cannot stop")
	}
	if _, err := drv.InspectTask(tr.taskID); err != nil {
		t.Fatalf("the task was destroyed on detach: %v", err)
	}
	if st, _ := drv.InspectTask(tr.taskID); st.State != drivers.TaskStateRunning {
		t.Fatalf("task state %s after detach, want still running", st.State)
	}
}
