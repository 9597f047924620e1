package allocrunner

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/cpuset"
	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

// cpusetDriver is the mock driver that can move running tasks: it records
// the shared cpuset each task started on and every move.
type cpusetDriver struct {
	*mock.Driver
	mu      sync.Mutex
	started map[string]string
	moves   map[string][]string
}

func (d *cpusetDriver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	d.mu.Lock()
	d.started[cfg.ID] = cfg.SharedCpuset
	d.mu.Unlock()
	return d.Driver.StartTask(cfg)
}

func (d *cpusetDriver) UpdateCpuset(taskID, cpus string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.moves[taskID] = append(d.moves[taskID], cpus)
	return nil
}

func (d *cpusetDriver) get(m map[string][]string, id string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return fmt.Sprint(m[id])
}

func (d *cpusetDriver) startedOn(id string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.started[id]
}

// An allocation with reserved cores holds them from its runner's creation
// (before its task starts) until the runner ends; a running task without
// cores is moved off them meanwhile and back afterwards, and a task that
// reserves cores is started on them alone, never moved.
func TestAllocRunner_CoresHeldWhileRunning(t *testing.T) {
	d := &cpusetDriver{Driver: mock.New(), started: map[string]string{}, moves: map[string][]string{}}
	m := cpuset.NewManager(cpuset.New(0, 1), nil)
	newRunner := func(alloc *structs.Allocation) (*AllocRunner, *recorder) {
		rec := &recorder{}
		ar, err := New(Config{
			Alloc: alloc, AllocRoot: t.TempDir(), Node: &structs.Node{ID: "node1", Name: "n1"},
			Drivers: map[string]drivers.Driver{d.Name(): d}, StateUpdater: rec.update,
			MaxKillTimeout: 2 * time.Second, Cpusets: m,
		})
		if err != nil {
			t.Fatal(err)
		}
		return ar, rec
	}

	shared := testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	sr, srec := newRunner(shared)
	sr.Start()
	t.Cleanup(sr.Shutdown)
	waitStatus(t, srec, structs.AllocClientStatusRunning)
	sharedTask := shared.ID + "/t"
	if got := d.startedOn(sharedTask); got != "0-1" {
		t.Fatalf("task without cores started on %q, want 0-1", got)
	}

	pinned := testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	pinned.AllocatedResources = &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
		"t": {Cpu: structs.AllocatedCpuResources{ReservedCores: []uint16{1}}},
	}}
	pr, prec := newRunner(pinned)
	// Held from creation: the running task already left core 1.
	if got := d.get(d.moves, sharedTask); got != "[0]" {
		t.Fatalf("moves of the task without cores after the reserving runner was built: %s, want [0]", got)
	}
	pr.Start()
	waitStatus(t, prec, structs.AllocClientStatusRunning)
	if got := d.startedOn(pinned.ID + "/t"); got != "" {
		t.Fatalf("task with reserved cores given the shared set %q", got)
	}
	pr.Kill("stop")
	<-pr.WaitCh()
	testutil.WaitFor(t, 10*time.Second, func() error {
		if got := d.get(d.moves, sharedTask); got != "[0 0-1]" {
			return fmt.Errorf("moves %s, want [0 0-1]", got)
		}
		return nil
	})
	if got := d.get(d.moves, pinned.ID+"/t"); got != "[]" {
		t.Fatalf("task with reserved cores was moved: %s", got)
	}
	if r := m.Reserved(); !r.Empty() {
		t.Fatalf("cores %q still held after the runner ended", r)
	}
}
