package mock

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
)

func TestMock_RunForExitCodeAndStop(t *testing.T) {
	d := New()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	_, err := d.StartTask(&drivers.TaskConfig{ID: "a/t", Name: "t", StdoutPath: out,
		Config: map[string]any{"run_for": "10ms", "exit_code": 3, "stdout_string": "hi\n"}})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := d.WaitTask(context.Background(), "a/t")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		if r.ExitCode != 3 {
			t.Fatalf("exit code %d", r.ExitCode)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("task did not exit")
	}
	if b, _ := os.ReadFile(out); string(b) != "hi\n" {
		t.Fatalf("stdout %q", b)
	}

	if _, err := d.StartTask(&drivers.TaskConfig{ID: "a/u", Name: "u", Config: map[string]any{"run_for": "-1s"}}); err != nil {
		t.Fatal(err)
	}
	ch, _ = d.WaitTask(context.Background(), "a/u")
	if err := d.StopTask("a/u", time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	if r := <-ch; r.Signal != 15 || r.Successful() {
		t.Fatalf("stop result %+v", r)
	}
	if err := d.DestroyTask("a/u", false); err != nil {
		t.Fatal(err)
	}
	if _, err := d.InspectTask("a/u"); err != drivers.ErrTaskNotFound {
		t.Fatalf("after destroy: %v", err)
	}
	if _, err := d.StartTask(&drivers.TaskConfig{ID: "a/v", Name: "v", Config: map[string]any{"start_error": "boom"}}); err == nil || err.Error() != "boom" {
		t.Fatalf("start_error: %v", err)
	}
}
