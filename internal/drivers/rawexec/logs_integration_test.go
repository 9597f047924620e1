package rawexec

import (
	"os"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/client/logs"
)

// The task runner hands the driver the collector's FIFOs: output, including
// what a task writes right before exiting, ends up in the rotated files.
func TestTaskOutputThroughCollector(t *testing.T) {
	d := New(Config{Enabled: true, DisableCgroups: os.Geteuid() != 0})
	tc := newTask(t, "logs", map[string]any{"command": "sh", "args": []string{"-c", "echo hello; echo problem >&2; exit 2"}}, nil)
	c, err := logs.StartCollector(tc.TaskDir, "logs", 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	tc.StdoutPath, tc.StderrPath = c.StdoutPath(), c.StderrPath()
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(tc.ID, true) })
	if r := waitExit(t, d, tc.ID); r.ExitCode != 2 {
		t.Fatalf("exit %+v", r)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for typ, want := range map[string]string{"stdout": "hello\n", "stderr": "problem\n"} {
		files, err := logs.FindLogFiles(tc.TaskDir, "logs", typ)
		if err != nil || len(files) != 1 {
			t.Fatalf("%s files %v %v", typ, files, err)
		}
		b, _ := os.ReadFile(files[0])
		if !strings.EqualFold(string(b), want) {
			t.Errorf("%s = %q, want %q", typ, b, want)
		}
	}
}
