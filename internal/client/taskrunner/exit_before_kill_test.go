package taskrunner

import (
	"context"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

// lateWaitDriver delivers a task's exit only once gate is closed, as a
// driver whose waiter has not yet passed on an exit it already knows of.
type lateWaitDriver struct {
	*mock.Driver
	gate chan struct{}
}

func (d *lateWaitDriver) WaitTask(ctx context.Context, id string) (<-chan *drivers.ExitResult, error) {
	in, err := d.Driver.WaitTask(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make(chan *drivers.ExitResult, 1)
	go func() {
		select {
		case res := <-in:
			select {
			case <-d.gate:
				out <- res
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
	}()
	return out, nil
}

// A batch task that failed on its own before the servers' stop reached it
// (a client back from a disconnection finds both at once) stays failed:
// before, the stop won and the task was recorded as killed, so the
// allocation of a failed task was reported complete.
func TestTaskFailedBeforeTheStopStaysFailed(t *testing.T) {
	drv := &lateWaitDriver{Driver: mock.New(), gate: make(chan struct{})}
	task := testutil.MockTask("work", map[string]any{"run_for": "10ms", "exit_code": 3})
	alloc := testutil.Alloc(structs.JobTypeBatch, task)
	tr := New(Config{Alloc: alloc, Task: task, Driver: drv, StateDB: &memDB{}})
	go tr.Run()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := drv.InspectTask(tr.taskID)
		if err == nil && st.State == drivers.TaskStateExited {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("task never exited")
		}
		time.Sleep(5 * time.Millisecond)
	}
	tr.Kill("alloc stopped by the servers")
	close(drv.gate)
	select {
	case <-tr.WaitCh():
	case <-time.After(10 * time.Second):
		t.Fatal("runner never finished")
	}
	st := tr.State()
	if st.State != structs.TaskStateDead || !st.Failed {
		var evs []string
		for _, e := range st.Events {
			evs = append(evs, e.Type)
		}
		t.Fatalf("task %s failed=%v events %q: want dead and failed (it exited 3 before the stop)", st.State, st.Failed, evs)
	}
}
