package rawexec

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
)

// A task outlives the driver (client) that started it: its supervisor keeps
// writing its output into the rotated log files with no driver around, and
// records its real exit code; a new driver given the persisted handle, or
// only the task config when the handle was never stored, reports that code.
func TestTaskOutlivesDriverWithLogsAndExitCode(t *testing.T) {
	for _, withHandle := range []bool{true, false} {
		name := "handle"
		if !withHandle {
			name = "starting-handle"
		}
		t.Run(name, func(t *testing.T) {
			cfg := Config{Enabled: true, DisableCgroups: os.Geteuid() != 0}
			tc := newTask(t, "outlive", map[string]any{"command": "sh", "args": []string{"-c",
				`i=0; while [ ! -f "$GO" ]; do i=$((i+1)); echo "line $i"; sleep 0.05; done; echo bye; exit 7`}},
				nil)
			tc.Env["GO"] = filepath.Join(tc.TaskDir, "go")
			logDir := filepath.Join(tc.TaskDir, "logs")
			if err := os.MkdirAll(logDir, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.StdoutPath, tc.StderrPath = "", ""
			tc.Logs = &drivers.LogConfig{Dir: logDir, MaxFiles: 2, MaxFileSizeMB: 1}
			h, err := New(cfg).StartTask(tc) // this driver is then gone
			if err != nil {
				t.Fatal(err)
			}
			logFile := filepath.Join(logDir, tc.Name+".stdout.0")
			lines := func() int {
				b, _ := os.ReadFile(logFile)
				return strings.Count(string(b), "\n")
			}
			waitFor(t, 10*time.Second, "output while no driver watches", func() bool { return lines() >= 5 })
			if err := os.WriteFile(tc.Env["GO"], nil, 0o644); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, "the exit recorded", func() bool {
				_, _, ok := readExit(shimDirOf(tc))
				return ok
			})
			if !withHandle {
				h = &drivers.TaskHandle{Config: tc, State: drivers.TaskStateStarting}
			}
			d2 := New(cfg)
			if err := d2.RecoverTask(h); err != nil {
				t.Fatal(err)
			}
			r := waitExit(t, d2, tc.ID)
			if r.ExitCode != 7 || r.Err != nil {
				t.Fatalf("recovered exit %+v, want exit code 7", r)
			}
			if err := d2.DestroyTask(tc.ID, true); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(logFile)
			out := string(b)
			if !strings.HasSuffix(out, "bye\n") || !strings.HasPrefix(out, "line 1\n") {
				t.Fatalf("log not complete: %q", out)
			}
			for i, l := range strings.Split(strings.TrimSuffix(strings.TrimSuffix(out, "bye\n"), "\n"), "\n") {
				if l != "line "+itoa(i+1) {
					t.Fatalf("log line %d is %q: lost or doubled output", i+1, l)
				}
			}
		})
	}
}

// A handle stored before a start that never happened is not recovered, so
// the client starts the task (once).
func TestRecoverNeverStartedTask(t *testing.T) {
	tc := newTask(t, "never", map[string]any{"command": "sh"}, nil)
	err := New(Config{Enabled: true, DisableCgroups: true}).RecoverTask(&drivers.TaskHandle{Config: tc, State: drivers.TaskStateStarting})
	if err == nil {
		t.Fatal("recovered a task that never started")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
