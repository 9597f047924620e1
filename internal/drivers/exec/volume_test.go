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

// A destination inside a chroot_env entry (a read-only view of the host's
// directory) that does not exist there is refused before the start with a
// message that says why and what to do; one that exists is mounted over.
func TestExecHostVolumeMountInsideChrootEnv(t *testing.T) {
	requireIsolation(t)
	vol := t.TempDir()
	if err := os.WriteFile(filepath.Join(vol, "app.conf"), []byte("conf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := New(Config{})
	tc := newTask(t, "volchroot", map[string]any{"command": "/bin/true"})
	tc.Mounts = []drivers.MountConfig{{HostPath: vol, TaskPath: "/etc/drover-test-missing-dir", ReadOnly: true}}
	_, err := d.StartTask(tc)
	if err == nil {
		_ = d.DestroyTask(tc.ID, true)
		t.Fatal("a mount point that cannot be created was accepted")
	}
	if !strings.Contains(err.Error(), `inside chroot_env entry "/etc"`) {
		t.Fatalf("error %q does not say the destination is inside the /etc chroot_env entry", err)
	}
	_ = d.DestroyTask(tc.ID, true)

	// /etc/ssl exists on the host: the volume covers it inside the task.
	if _, err := os.Stat("/etc/ssl"); err != nil {
		t.Skip("host has no /etc/ssl")
	}
	tc = newTask(t, "volchroot2", map[string]any{"command": "/bin/cat", "args": []any{"/etc/ssl/app.conf"}})
	tc.Mounts = []drivers.MountConfig{{HostPath: vol, TaskPath: "/etc/ssl", ReadOnly: true}}
	r, out, errOut := runToExit(t, d, tc)
	if !r.Successful() || out != "conf\n" {
		t.Fatalf("task over an existing chroot_env dir: %+v stdout %q stderr %q", r, out, errOut)
	}
}
