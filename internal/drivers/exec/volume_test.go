package exec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/drivers"
)

// A host volume mount binds the host directory into the task's root: a
// file the task writes there is found at the host path, a read-only mount
// refuses writes, and NOMAD_* stays as it was.
func TestExecHostVolumeMount(t *testing.T) {
	requireIsolation(t)
	rw, ro := t.TempDir(), t.TempDir()
	for _, d := range []string{rw, ro} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ro, "seed"), []byte("seeded\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := New(Config{})
	tc := newTask(t, "vol", map[string]any{"command": "/bin/sh", "args": []any{"-c",
		`echo written > /srv/data/out && cat /srv/conf/seed && ` +
			`(echo x > /srv/conf/nope 2>/dev/null && echo "ro=writable" || echo "ro=refused"); echo "taskdir=$NOMAD_TASK_DIR"`}})
	tc.Mounts = []drivers.MountConfig{
		{HostPath: rw, TaskPath: "/srv/data"},
		{HostPath: ro, TaskPath: "srv/conf", ReadOnly: true},
	}
	r, out, errOut := runToExit(t, d, tc)
	if !r.Successful() {
		t.Fatalf("task failed: %+v\nstdout: %s\nstderr: %s", r, out, errOut)
	}
	for _, want := range []string{"seeded\n", "ro=refused\n", "taskdir=/local\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s\nstderr: %s", want, out, errOut)
		}
	}
	if b, err := os.ReadFile(filepath.Join(rw, "out")); err != nil || string(b) != "written\n" {
		t.Errorf("the task's write to the volume is not at the host path: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(ro, "nope")); err == nil {
		t.Errorf("the task wrote into a read-only volume")
	}
}

// A volume mount over the isolation's own directories is refused with a
// message naming the destination.
func TestExecHostVolumeMountReservedDestination(t *testing.T) {
	requireIsolation(t)
	d := New(Config{})
	tc := newTask(t, "volbad", map[string]any{"command": "/bin/true"})
	tc.Mounts = []drivers.MountConfig{{HostPath: t.TempDir(), TaskPath: "/proc/x"}}
	_, err := d.StartTask(tc)
	if err == nil {
		_ = d.DestroyTask(tc.ID, true)
		t.Fatal("a mount under /proc was accepted")
	}
	if !strings.Contains(err.Error(), `"/proc/x"`) {
		t.Fatalf("error %q does not name the destination", err)
	}
	_ = d.DestroyTask(tc.ID, true)
}
