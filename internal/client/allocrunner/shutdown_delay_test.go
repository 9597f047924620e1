package allocrunner

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

// stopTimer records when each task was told to stop.
type stopTimer struct {
	drivers.Driver
	mu    sync.Mutex
	stops map[string]time.Time
}

func (s *stopTimer) StopTask(id string, timeout time.Duration, signal string) error {
	s.mu.Lock()
	s.stops[id] = time.Now()
	s.mu.Unlock()
	return s.Driver.StopTask(id, timeout, signal)
}

func (s *stopTimer) stopped(id string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.stops[id]
	return t, ok
}

// timedRegistrar records when each service was deregistered.
type timedRegistrar struct {
	fakeRegistrar
	mu      sync.Mutex
	deleted map[string]time.Time
}

func (r *timedRegistrar) DeleteService(ns, id string) error {
	r.mu.Lock()
	r.deleted[id] = time.Now()
	r.mu.Unlock()
	return r.fakeRegistrar.DeleteService(ns, id)
}

func (r *timedRegistrar) deletedAt(id string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.deleted[id]
	return t, ok
}

// delayAlloc has one long-running task "t" with a task service "tsvc" and
// a group service "gsvc".
func delayAlloc(groupDelay, taskDelay time.Duration) *structs.Allocation {
	task := testutil.MockTask("t", map[string]any{"run_for": "-1s"})
	task.ShutdownDelay = taskDelay
	task.Services = []*structs.Service{{Name: "tsvc", Provider: "nomad"}}
	a := testutil.Alloc(structs.JobTypeService, task)
	a.NodeID = "node1"
	tg := a.Job.TaskGroups[0]
	tg.Services = []*structs.Service{{Name: "gsvc", Provider: "nomad"}}
	if groupDelay > 0 {
		tg.ShutdownDelay = &groupDelay
	}
	return a
}

func runDelayAlloc(t *testing.T, a *structs.Allocation) (*AllocRunner, *stopTimer, *timedRegistrar, *recorder) {
	t.Helper()
	drv := &stopTimer{Driver: mock.New(), stops: map[string]time.Time{}}
	reg := &timedRegistrar{fakeRegistrar: fakeRegistrar{regs: map[string]*structs.ServiceRegistration{}}, deleted: map[string]time.Time{}}
	rec := &recorder{}
	ar, err := New(Config{Alloc: a, AllocRoot: t.TempDir(), Node: &structs.Node{ID: "node1", Name: "n1", Datacenter: "dc1"},
		Drivers: map[string]drivers.Driver{"mock_driver": drv}, StateUpdater: rec.update, MaxKillTimeout: 2 * time.Second, Services: reg})
	if err != nil {
		t.Fatal(err)
	}
	ar.Start()
	t.Cleanup(ar.Shutdown)
	waitStatus(t, rec, structs.AllocClientStatusRunning)
	testutil.WaitFor(t, 10*time.Second, func() error {
		if regs, _ := reg.snapshot(); len(regs) != 2 {
			return fmt.Errorf("registrations %d, want 2", len(regs))
		}
		return nil
	})
	return ar, drv, reg, rec
}

func hasEvent(st *structs.TaskState, typ string) bool {
	for _, e := range st.Events {
		if e.Type == typ {
			return true
		}
	}
	return false
}

// Stopping an allocation: the group's services go, the group's
// shutdown_delay runs, the task's services go, the task's shutdown_delay
// runs, and only then is the task told to stop.
func TestShutdownDelay_ServicesGoFirstThenDelays(t *testing.T) {
	// "At once" is told from "after the group's delay" by that delay: it
	// is long enough that a loaded machine under -race still deregisters
	// the group's services well within it.
	const groupDelay, taskDelay = 1500 * time.Millisecond, 600 * time.Millisecond
	a := delayAlloc(groupDelay, taskDelay)
	ar, drv, reg, _ := runDelayAlloc(t, a)
	gID := structs.ServiceRegistrationID(a.ID, "web", "gsvc", "")
	tID := structs.ServiceRegistrationID(a.ID, "t", "tsvc", "")

	killed := time.Now()
	cp := *a
	stop := &cp
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	ar.Update(stop)
	select {
	case <-ar.WaitCh():
	case <-time.After(15 * time.Second):
		t.Fatal("allocation never stopped")
	}
	gAt, ok1 := reg.deletedAt(gID)
	tAt, ok2 := reg.deletedAt(tID)
	stopAt, ok3 := drv.stopped(a.ID + "/t")
	if !ok1 || !ok2 || !ok3 {
		t.Fatalf("group svc deleted %v, task svc deleted %v, task stopped %v", ok1, ok2, ok3)
	}
	if gAt.Sub(killed) >= groupDelay {
		t.Errorf("group service deregistered %s after the stop, want at once (not after the group's shutdown_delay %s)", gAt.Sub(killed), groupDelay)
	}
	if d := tAt.Sub(gAt); d < groupDelay {
		t.Errorf("task service deregistered %s after the group's, want >= group shutdown_delay %s", d, groupDelay)
	}
	if d := stopAt.Sub(tAt); d < taskDelay {
		t.Errorf("task signalled %s after its service was deregistered, want >= task shutdown_delay %s", d, taskDelay)
	}
	if !hasEvent(ar.TaskState("t"), structs.TaskWaitingShuttingDownDelay) {
		t.Errorf("no %q event: %+v", structs.TaskWaitingShuttingDownDelay, ar.TaskState("t").Events)
	}
}

// A stop with NoShutdownDelay skips both delays: the task is signalled at
// once, and its events say the delay was skipped.
func TestShutdownDelay_NoShutdownDelaySkips(t *testing.T) {
	a := delayAlloc(time.Minute, time.Minute)
	ar, drv, reg, _ := runDelayAlloc(t, a)
	killed := time.Now()
	cp := *a
	stop := &cp
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	yes := true
	stop.DesiredTransition.NoShutdownDelay = &yes
	ar.Update(stop)
	select {
	case <-ar.WaitCh():
	case <-time.After(15 * time.Second):
		t.Fatal("allocation still stopping with no_shutdown_delay (the delays ran)")
	}
	stopAt, ok := drv.stopped(a.ID + "/t")
	if !ok || stopAt.Sub(killed) > 10*time.Second {
		t.Fatalf("task stopped %v after %s", ok, stopAt.Sub(killed))
	}
	if regs, _ := reg.snapshot(); len(regs) != 0 {
		t.Fatalf("services left registered: %+v", regs)
	}
	st := ar.TaskState("t")
	if !hasEvent(st, structs.TaskSkippingShutdownDelay) || hasEvent(st, structs.TaskWaitingShuttingDownDelay) {
		t.Fatalf("events %+v, want %q and no %q", st.Events, structs.TaskSkippingShutdownDelay, structs.TaskWaitingShuttingDownDelay)
	}
}

// An allocation stopped before any of its tasks ran has no traffic to
// drain: the group's shutdown_delay is not waited.
func TestShutdownDelay_NotWaitedWhenNothingRan(t *testing.T) {
	a := delayAlloc(time.Minute, time.Minute)
	hold := make(chan struct{}) // never opened: the tasks never start
	ar, err := New(Config{Alloc: a, AllocRoot: t.TempDir(), Node: &structs.Node{ID: "node1"},
		Drivers: map[string]drivers.Driver{"mock_driver": mock.New()}, StateUpdater: (&recorder{}).update,
		Services: &fakeRegistrar{regs: map[string]*structs.ServiceRegistration{}}, Hold: hold})
	if err != nil {
		t.Fatal(err)
	}
	ar.Start()
	cp := *a
	cp.DesiredStatus = structs.AllocDesiredStatusStop
	ar.Update(&cp)
	select {
	case <-ar.WaitCh():
	case <-time.After(15 * time.Second):
		t.Fatal("an allocation that never ran waited for its shutdown_delay")
	}
}

// A stop with no_shutdown_delay that arrives while the allocation already
// waits its shutdown_delay (a second `job stop -no-shutdown-delay` or
// `alloc stop -no-shutdown-delay` after a plain stop) ends the wait: with
// a delay of hours, the operator had no other way to stop the task than
// killing the agent. Both the group's and the task's delay are cut.
func TestShutdownDelay_LaterNoShutdownDelayEndsTheWait(t *testing.T) {
	for _, tc := range []struct {
		name              string
		group, task       time.Duration
		waitingTasksDelay bool
	}{
		{"group delay", 10 * time.Hour, 0, false},
		{"task delay", 0, 10 * time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := delayAlloc(tc.group, tc.task)
			ar, drv, reg, _ := runDelayAlloc(t, a)
			t.Cleanup(ar.Detach) // a failing run ends its wait here
			cp := *a
			stop := &cp
			stop.DesiredStatus = structs.AllocDesiredStatusStop
			ar.Update(stop)
			// The group's services go once its delay is decided on.
			gID := structs.ServiceRegistrationID(a.ID, "web", "gsvc", "")
			testutil.WaitFor(t, 10*time.Second, func() error {
				if _, ok := reg.deletedAt(gID); !ok {
					return fmt.Errorf("group service not yet deregistered")
				}
				return nil
			})
			if tc.waitingTasksDelay {
				testutil.WaitFor(t, 10*time.Second, func() error {
					if !hasEvent(ar.TaskState("t"), structs.TaskWaitingShuttingDownDelay) {
						return fmt.Errorf("task not yet waiting its shutdown_delay")
					}
					return nil
				})
			}
			if _, ok := drv.stopped(a.ID + "/t"); ok {
				t.Fatal("task signalled before its shutdown_delay")
			}
			again := *stop
			yes := true
			again.DesiredTransition.NoShutdownDelay = &yes
			ar.Update(&again)
			select {
			case <-ar.WaitCh():
			case <-time.After(15 * time.Second):
				t.Fatal("allocation still waiting its shutdown_delay after a stop with no_shutdown_delay")
			}
			if _, ok := drv.stopped(a.ID + "/t"); !ok {
				t.Fatal("task never signalled")
			}
			if tc.waitingTasksDelay && !hasEvent(ar.TaskState("t"), structs.TaskSkippingShutdownDelay) {
				t.Fatalf("events %+v, want %q", ar.TaskState("t").Events, structs.TaskSkippingShutdownDelay)
			}
		})
	}
}

// SkipShutdownDelay (the agent told a second time to shut down) ends a
// running group delay the same way.
func TestShutdownDelay_SkipEndsTheWait(t *testing.T) {
	a := delayAlloc(10*time.Hour, 10*time.Hour)
	ar, _, _, _ := runDelayAlloc(t, a)
	t.Cleanup(ar.Detach) // a failing run ends its wait here
	ar.Kill("client shutting down")
	time.AfterFunc(200*time.Millisecond, ar.SkipShutdownDelay)
	select {
	case <-ar.WaitCh():
	case <-time.After(15 * time.Second):
		t.Fatal("allocation still waiting its shutdown_delay after SkipShutdownDelay")
	}
}
