package allocrunner

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

type recorder struct {
	mu      sync.Mutex
	updates []*structs.Allocation
}

func (r *recorder) update(a *structs.Allocation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, a)
}

func (r *recorder) last() *structs.Allocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.updates) == 0 {
		return nil
	}
	return r.updates[len(r.updates)-1]
}

func (r *recorder) sawStatus(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range r.updates {
		if u.ClientStatus == s {
			return true
		}
	}
	return false
}

func newRunner(t *testing.T, alloc *structs.Allocation, d *mock.Driver) (*AllocRunner, *recorder) {
	t.Helper()
	rec := &recorder{}
	ar, err := New(Config{
		Alloc: alloc, AllocRoot: t.TempDir(), Node: &structs.Node{ID: "node1", Name: "n1"},
		Drivers: map[string]drivers.Driver{d.Name(): d}, StateUpdater: rec.update,
		MaxKillTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	ar.Start()
	t.Cleanup(ar.Shutdown)
	return ar, rec
}

func waitStatus(t *testing.T, rec *recorder, status string) *structs.Allocation {
	t.Helper()
	var got *structs.Allocation
	testutil.WaitFor(t, 10*time.Second, func() error {
		got = rec.last()
		if got == nil || got.ClientStatus != status {
			return fmt.Errorf("last update %+v, want %s", got, status)
		}
		return nil
	})
	return got
}

func eventTypes(st *structs.TaskState) []string {
	var out []string
	for _, e := range st.Events {
		out = append(out, e.Type)
	}
	return out
}

func TestAllocRunner_BatchCompletes(t *testing.T) {
	d := mock.New()
	alloc := testutil.Alloc(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "50ms"}))
	_, rec := newRunner(t, alloc, d)
	got := waitStatus(t, rec, structs.AllocClientStatusComplete)
	if !rec.sawStatus(structs.AllocClientStatusRunning) {
		t.Fatal("never reported running")
	}
	st := got.TaskStates["t"]
	if st.State != structs.TaskStateDead || st.Failed || st.StartedAt.IsZero() || st.FinishedAt.IsZero() {
		t.Fatalf("task state %+v", st)
	}
	want := []string{structs.TaskReceived, structs.TaskSetup, structs.TaskStarted, structs.TaskTerminated}
	if fmt.Sprint(eventTypes(st)) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", eventTypes(st), want)
	}
	if n := d.StartCount("t"); n != 1 {
		t.Fatalf("batch task started %d times", n)
	}
}

func TestAllocRunner_DesiredStopKills(t *testing.T) {
	d := mock.New()
	alloc := testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	ar, rec := newRunner(t, alloc, d)
	waitStatus(t, rec, structs.AllocClientStatusRunning)
	stop := *alloc
	stop.DesiredStatus = structs.AllocDesiredStatusStop
	ar.Update(&stop)
	got := waitStatus(t, rec, structs.AllocClientStatusComplete)
	types := eventTypes(got.TaskStates["t"])
	if fmt.Sprint(types[len(types)-3:]) != fmt.Sprint([]string{structs.TaskKilling, structs.TaskTerminated, structs.TaskKilled}) {
		t.Fatalf("events %v", types)
	}
}

func TestAllocRunner_RestartPolicyThenFail(t *testing.T) {
	d := mock.New()
	alloc := testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "5ms", "exit_code": 1}))
	alloc.Job.TaskGroups[0].RestartPolicy.Attempts = 2
	_, rec := newRunner(t, alloc, d)
	got := waitStatus(t, rec, structs.AllocClientStatusFailed)
	st := got.TaskStates["t"]
	if st.Restarts != 2 || !st.Failed || d.StartCount("t") != 3 {
		t.Fatalf("restarts %d failed %v starts %d", st.Restarts, st.Failed, d.StartCount("t"))
	}
	if last := st.Events[len(st.Events)-1]; last.Type != structs.TaskNotRestarting || !last.FailsTask {
		t.Fatalf("last event %+v", last)
	}
}

func TestAllocRunner_UnknownDriverFails(t *testing.T) {
	d := mock.New()
	task := testutil.MockTask("t", map[string]any{"run_for": "-1s"})
	task.Driver = "nope"
	alloc := testutil.Alloc(structs.JobTypeBatch, task)
	_, rec := newRunner(t, alloc, d)
	got := waitStatus(t, rec, structs.AllocClientStatusFailed)
	if ev := got.TaskStates["t"].Events; ev[len(ev)-1].Type != structs.TaskDriverFailure {
		t.Fatalf("events %v", eventTypes(got.TaskStates["t"]))
	}
}

func TestAllocRunner_LifecycleOrderAndLeader(t *testing.T) {
	d := mock.New()
	pre := testutil.MockTask("pre", map[string]any{"run_for": "30ms"})
	pre.Lifecycle = &structs.TaskLifecycle{Hook: "prestart"}
	side := testutil.MockTask("side", map[string]any{"run_for": "-1s"})
	side.Lifecycle = &structs.TaskLifecycle{Hook: "prestart", Sidecar: true}
	leader := testutil.MockTask("leader", map[string]any{"run_for": "50ms"})
	leader.Leader = true
	other := testutil.MockTask("other", map[string]any{"run_for": "-1s"})
	post := testutil.MockTask("post", map[string]any{"run_for": "1ms"})
	post.Lifecycle = &structs.TaskLifecycle{Hook: "poststop"}
	alloc := testutil.Alloc(structs.JobTypeBatch, pre, side, leader, other, post)
	_, rec := newRunner(t, alloc, d)
	got := waitStatus(t, rec, structs.AllocClientStatusComplete)
	ts := got.TaskStates
	if !ts["leader"].StartedAt.After(ts["pre"].FinishedAt) && !ts["leader"].StartedAt.Equal(ts["pre"].FinishedAt) {
		t.Fatalf("main started %v before prestart finished %v", ts["leader"].StartedAt, ts["pre"].FinishedAt)
	}
	if ts["post"].StartedAt.Before(ts["leader"].FinishedAt) || ts["post"].StartedAt.Before(ts["other"].FinishedAt) {
		t.Fatal("poststop started before main tasks ended")
	}
	for _, n := range []string{"other", "side"} {
		ty := eventTypes(ts[n])
		if ty[len(ty)-1] != structs.TaskKilled {
			t.Fatalf("%s not killed after leader exit: %v", n, ty)
		}
	}
}

func TestAllocRunner_PrestartFailureSkipsMain(t *testing.T) {
	d := mock.New()
	pre := testutil.MockTask("pre", map[string]any{"run_for": "1ms", "exit_code": 2})
	pre.Lifecycle = &structs.TaskLifecycle{Hook: "prestart"}
	main := testutil.MockTask("main", map[string]any{"run_for": "-1s"})
	alloc := testutil.Alloc(structs.JobTypeBatch, pre, main)
	_, rec := newRunner(t, alloc, d)
	got := waitStatus(t, rec, structs.AllocClientStatusFailed)
	if d.StartCount("main") != 0 || !got.TaskStates["main"].StartedAt.IsZero() {
		t.Fatal("main task ran although prestart failed")
	}
	if got.TaskStates["main"].State != structs.TaskStateDead {
		t.Fatalf("main state %s", got.TaskStates["main"].State)
	}
}

// A task granted a device the client cannot reserve fails at setup
// without ever starting: it must not run believing it has the device.
func TestAllocRunner_UnreservableDeviceFailsTask(t *testing.T) {
	d := mock.New()
	alloc := testutil.Alloc(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "10ms"}))
	alloc.AllocatedResources = &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
		"t": {Devices: []*structs.AllocatedDeviceResource{{Vendor: "drover", Type: "gpu", Name: "fake-1", DeviceIDs: []string{"fake-1-0"}}}},
	}}
	_, rec := newRunner(t, alloc, d)
	got := waitStatus(t, rec, structs.AllocClientStatusFailed)
	ev := got.TaskStates["t"].Events
	if last := ev[len(ev)-1]; last.Type != structs.TaskSetupFailure || !strings.Contains(last.Message, "device") {
		t.Fatalf("last event %+v", last)
	}
	if n := d.StartCount("t"); n != 0 {
		t.Fatalf("task started %d times without its device", n)
	}
}
