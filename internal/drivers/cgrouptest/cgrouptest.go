// Package cgrouptest is the test kit for driver code that must survive a
// cgroup it cannot remove: it makes one on demand. For tests only; never
// imported by the product.
package cgrouptest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// BusyChild makes the cgroup dir/child and bind-mounts a directory on it,
// so rmdir of it (and of dir) fails with EBUSY, as for a cgroup a process
// will not leave. release undoes the mount (the cgroups can go again); it
// is safe to call more than once and runs at the test's end. The test's
// cleanup then removes child and dir if they are still there.
func BusyChild(t testing.TB, dir string) (child string, release func()) {
	t.Helper()
	child = filepath.Join(dir, "child")
	if err := os.Mkdir(child, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(t.TempDir(), child, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount on %s: %v", child, err)
	}
	mounted := true
	release = func() {
		if mounted {
			if err := syscall.Unmount(child, 0); err != nil {
				t.Errorf("unmount %s: %v", child, err)
			}
			mounted = false
		}
	}
	t.Cleanup(func() {
		release()
		_ = os.Remove(child)
		_ = os.Remove(dir)
	})
	return child, release
}
