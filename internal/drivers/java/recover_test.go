package java

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
)

// A restarted agent re-attaches to a running java task and can stop it.
// The recovery read the task's java config as exec's and refused it
// ("unknown key"), leaving the JVM running untracked beside the copy the
// client then started.
func TestJavaRecover(t *testing.T) {
	d := requireJava(t)
	src := t.TempDir()
	prog := `public class Idle { public static void main(String[] a) throws Exception { Thread.sleep(600000); } }`
	if err := os.WriteFile(filepath.Join(src, "Idle.java"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{{"javac", "Idle.java"}, {"jar", "cfe", "idle.jar", "Idle", "Idle.class"}} {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, out)
		}
	}
	tc := newTask(t, fmt.Sprintf("%d-javarecover", time.Now().UnixNano()))
	jar, _ := os.ReadFile(filepath.Join(src, "idle.jar"))
	if err := os.WriteFile(filepath.Join(tc.TaskDir, "local", "idle.jar"), jar, 0o644); err != nil {
		t.Fatal(err)
	}
	tc.Config = map[string]any{"jar_path": "local/idle.jar", "jvm_options": []any{"-Xmx32m", "-Xshare:off"}}
	h, err := d.StartTask(tc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(tc.ID, true) })
	st0, err := d.InspectTask(tc.ID)
	if err != nil || len(st0.PIDs) == 0 {
		t.Fatalf("inspect: %+v %v", st0, err)
	}

	d2 := New(Config{})
	if err := d2.RecoverTask(h); err != nil {
		t.Fatalf("recover a running java task: %v", err)
	}
	st, err := d2.InspectTask(tc.ID)
	if err != nil || st.State != drivers.TaskStateRunning || len(st.PIDs) == 0 || st.PIDs[0] != st0.PIDs[0] {
		t.Fatalf("recovered task: %+v %v (was %v)", st, err, st0.PIDs)
	}
	if err := d2.StopTask(tc.ID, time.Second, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	if err := d2.DestroyTask(tc.ID, true); err != nil {
		t.Fatal(err)
	}
	for _, pid := range st0.PIDs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if f := strings.Fields(string(b)); err == nil && len(f) > 2 && f[2] != "Z" {
			t.Errorf("task process %d still runs after the recovered task was stopped", pid)
		}
	}
}
