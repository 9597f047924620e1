package taskrunner

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
)

// pullingDriver reports an image download while it starts a task, as the
// container drivers do.
type pullingDriver struct{ drivers.Driver }

func (d pullingDriver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	cfg.Event("Downloading image", map[string]string{"image": "redis:7"})
	return d.Driver.StartTask(cfg)
}

// A driver's event while it starts the task is a "Driver" task event with
// its message and details, before Started (Nomad's "Downloading image").
func TestDriverEventBecomesTaskEvent(t *testing.T) {
	task := testutil.MockTask("web", map[string]any{"run_for": "50ms"})
	alloc := testutil.Alloc(structs.JobTypeBatch, task)
	tr := New(Config{Alloc: alloc, Task: task, Driver: pullingDriver{mock.New()}, StateDB: &memDB{}})
	go tr.Run()
	select {
	case <-tr.WaitCh():
	case <-time.After(10 * time.Second):
		t.Fatal("task did not finish")
	}
	var types []string
	var ev *structs.TaskEvent
	for _, e := range tr.State().Events {
		types = append(types, e.Type)
		if e.Type == structs.TaskDriverMessage {
			ev = e
		}
	}
	if ev == nil || ev.DriverMessage != "Downloading image" || ev.DisplayMessage != "Downloading image" || ev.Details["image"] != "redis:7" {
		t.Fatalf("no Driver event with the image: %+v (events %v)", ev, types)
	}
	for i, typ := range types {
		if typ == structs.TaskStarted && (i == 0 || types[i-1] != structs.TaskDriverMessage) {
			t.Fatalf("events %v: want the Driver event right before Started", types)
		}
	}
}
