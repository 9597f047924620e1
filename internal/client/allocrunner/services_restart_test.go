package allocrunner

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

// stopSpy is the mock driver recording which registrations the servers
// held each time a task was signalled.
type stopSpy struct {
	*mock.Driver
	reg *fakeRegistrar
	mu  sync.Mutex
	at  [][]string // registration IDs held at each StopTask
}

func (d *stopSpy) StopTask(id string, timeout time.Duration, signal string) error {
	regs, _ := d.reg.snapshot()
	ids := []string{}
	for _, r := range regs {
		ids = append(ids, r.ID)
	}
	d.mu.Lock()
	d.at = append(d.at, ids)
	d.mu.Unlock()
	return d.Driver.StopTask(id, timeout, signal)
}

func (d *stopSpy) stops() [][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]string(nil), d.at...)
}

// An in-place restart (alloc restart, check_restart) deregisters the
// task's services before the task is signalled, as Nomad does, and
// registers them again once it runs; the group's service stays
// registered throughout.
func TestServices_RestartDeregistersBeforeSignal(t *testing.T) {
	a := testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	a.NodeID = "node1"
	a.AllocatedResources = &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
		Ports: structs.AllocatedPorts{{Label: "http", Value: 25000, HostIP: "127.0.0.1"}}}}
	tg := a.Job.TaskGroups[0]
	tg.Services = []*structs.Service{{Name: "group-svc", Provider: "nomad", PortLabel: "http"}}
	tg.Tasks[0].Services = []*structs.Service{{Name: "task-svc", Provider: "nomad", PortLabel: "http"}}
	reg := &fakeRegistrar{regs: map[string]*structs.ServiceRegistration{}}
	d := &stopSpy{Driver: mock.New(), reg: reg}
	rec := &recorder{}
	ar, err := New(Config{
		Alloc: a, AllocRoot: t.TempDir(), Node: &structs.Node{ID: "node1", Name: "n1", Datacenter: "dc1"},
		Drivers: map[string]drivers.Driver{d.Name(): d}, StateUpdater: rec.update,
		MaxKillTimeout: 2 * time.Second, Services: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	ar.Start()
	t.Cleanup(ar.Shutdown)
	waitStatus(t, rec, structs.AllocClientStatusRunning)
	names := func() map[string]bool {
		regs, _ := reg.snapshot()
		m := map[string]bool{}
		for _, r := range regs {
			m[r.ServiceName] = true
		}
		return m
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		if n := names(); !n["task-svc"] || !n["group-svc"] {
			return fmt.Errorf("registered %v", n)
		}
		return nil
	})
	regs, _ := reg.snapshot()
	taskID := ""
	for _, r := range regs {
		if r.ServiceName == "task-svc" {
			taskID = r.ID
		}
	}

	for round := 1; round <= 2; round++ {
		if err := ar.RestartTasks([]string{"t"}, "", uint64(round)); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, 10*time.Second, func() error {
			st := ar.TaskState("t")
			if st.Restarts != uint64(round) || st.State != structs.TaskStateRunning {
				return fmt.Errorf("task %s, restarts %d", st.State, st.Restarts)
			}
			if n := names(); !n["task-svc"] || !n["group-svc"] {
				return fmt.Errorf("registered %v after the restart", n)
			}
			return nil
		})
		stops := d.stops()
		if len(stops) != round {
			t.Fatalf("round %d: %d stops", round, len(stops))
		}
		held := stops[round-1]
		if len(held) != 1 || held[0] == taskID {
			t.Fatalf("round %d: the servers held %v when the task was signalled, want only the group's service (not %s)", round, held, taskID)
		}
	}
}

// check_restart restarts the task the same way: its service is
// deregistered before the signal and back once the task runs again.
func TestServices_CheckRestartDeregistersBeforeSignal(t *testing.T) {
	var ok atomic.Bool
	host, port := checkedServer(t, &ok)
	a := testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	a.NodeID = "node1"
	a.AllocatedResources = &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
		Ports: structs.AllocatedPorts{{Label: "http", Value: port, HostIP: host}}}}
	a.Job.TaskGroups[0].Tasks[0].Services = []*structs.Service{{Name: "task-svc", Provider: "nomad", PortLabel: "http",
		Checks: []structs.ServiceCheck{{Name: "alive", Type: "http", Path: "/health", Interval: 20 * time.Millisecond, Timeout: time.Second,
			CheckRestart: &api.CheckRestart{Limit: 2}}}}}
	reg := &fakeRegistrar{regs: map[string]*structs.ServiceRegistration{}}
	d := &stopSpy{Driver: mock.New(), reg: reg}
	rec := &recorder{}
	ar, err := New(Config{
		Alloc: a, AllocRoot: t.TempDir(), Node: &structs.Node{ID: "node1", Name: "n1", Datacenter: "dc1"},
		Drivers: map[string]drivers.Driver{d.Name(): d}, StateUpdater: rec.update,
		MaxKillTimeout: 2 * time.Second, Services: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	ar.Start()
	t.Cleanup(ar.Shutdown)
	testutil.WaitFor(t, 10*time.Second, func() error {
		if len(d.stops()) == 0 {
			return fmt.Errorf("no restart yet")
		}
		return nil
	})
	ok.Store(true) // healthy from now on: one restart
	if held := d.stops()[0]; len(held) != 0 {
		t.Fatalf("the servers held %v when check_restart signalled the task, want nothing", held)
	}
	testutil.WaitFor(t, 10*time.Second, func() error {
		st := ar.TaskState("t")
		regs, _ := reg.snapshot()
		if st.State != structs.TaskStateRunning || st.Restarts < 1 || len(regs) != 1 {
			return fmt.Errorf("task %s, restarts %d, registrations %d", st.State, st.Restarts, len(regs))
		}
		return nil
	})
}
