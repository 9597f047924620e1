package isolate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The command is found as the task will see it: in its PATH through the
// chroot_env binds, then in /local and /; a missing one fails the start
// with its name, and a mount target behind a symlink in the task dir is
// refused.
func TestLookPathAndRoot(t *testing.T) {
	root, host := t.TempDir(), t.TempDir()
	for _, d := range []string{filepath.Join(host, "bin"), filepath.Join(root, "local")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(host, "bin", "tool"), filepath.Join(root, "local", "mine")} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := &Spec{Root: root, Chroot: map[string]string{host: "/usr"}, Env: []string{"PATH=/usr/bin:/bin"}}
	for cmd, want := range map[string]struct {
		path    string
		viaPath bool
		err     string
	}{
		"tool":           {"/usr/bin/tool", true, ""},
		"mine":           {"/local/mine", false, ""},
		"/usr/bin/tool":  {"/usr/bin/tool", true, ""},
		"nope":           {"", false, `command "nope" not found in the task's root (PATH /usr/bin:/bin, /local)`},
		"/usr/bin/other": {"", false, "command /usr/bin/other"},
	} {
		s.Path = cmd
		p, via, err := s.lookPath()
		if want.err != "" {
			if err == nil || !strings.Contains(err.Error(), want.err) {
				t.Errorf("%s: want error %q, got %v", cmd, want.err, err)
			}
			continue
		}
		if err != nil || p != want.path || via != want.viaPath {
			t.Errorf("%s: got %q %v %v, want %q %v", cmd, p, via, err, want.path, want.viaPath)
		}
	}
	if err := os.Symlink(host, filepath.Join(root, "alloc")); err != nil {
		t.Fatal(err)
	}
	s.SharedAlloc = host
	if err := s.prepareRoot(); err == nil || !strings.Contains(err.Error(), "/alloc in the task directory is a symlink") {
		t.Fatalf("want a refusal naming /alloc, got %v", err)
	}
}
