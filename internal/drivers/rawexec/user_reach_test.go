package rawexec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A task run as another user whose task directory lies under a directory
// that user cannot search (a data_dir made 0700) is refused naming that
// directory. It failed with "fork/exec /bin/sh: permission denied", which
// names the command, not the directory to fix.
func TestTaskUserCannotReachTaskDir(t *testing.T) {
	requireRoot(t, "running a task as another user")
	d := New(Config{Enabled: true})
	base, err := os.MkdirTemp("", "rawexec-reach-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	if err := os.Chmod(base, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "alloc", "t")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	tc := newTask(t, "reach", map[string]any{"command": "/bin/sh", "args": []any{"-c", "sleep 600"}}, nil)
	tc.TaskDir = dir
	tc.User = "nobody"
	_, err = d.StartTask(tc)
	if err == nil {
		_ = d.DestroyTask(tc.ID, true)
		t.Fatal("a task whose user cannot reach its directory started")
	}
	if !strings.Contains(err.Error(), base+" (mode 0700") || !strings.Contains(err.Error(), "not searchable") {
		t.Fatalf("error does not name the directory the user cannot search (%s): %v", base, err)
	}

	// Searchable, the task starts.
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	if _, err := d.StartTask(tc); err != nil {
		t.Fatalf("start with the directory searchable: %v", err)
	}
	_ = d.DestroyTask(tc.ID, true)
}
