package allocdir

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// OpenRead opens regular files only, at once, and names alloc-relative
// paths in every error.
func TestOpenReadRefusesAllButRegularFiles(t *testing.T) {
	d := build(t)
	data := filepath.Join(d.AllocDir, "alloc", "data")
	if err := os.WriteFile(filepath.Join(data, "file"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(data, "pipe"), 0o666); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(data, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Symlink("pipe", filepath.Join(data, "to-pipe")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(data, "to-dev")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("file", filepath.Join(data, "to-file")); err != nil {
		t.Fatal(err)
	}

	for _, p := range []string{"alloc/data/file", "alloc/data/./to-file"} {
		f, err := d.OpenRead(p)
		if err != nil {
			t.Fatalf("OpenRead(%q): %v", p, err)
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != "hello" {
			t.Fatalf("OpenRead(%q) read %q", p, b)
		}
	}

	cases := []struct {
		path, want string
		is         error
	}{
		{"alloc/data/pipe", `"alloc/data/pipe" is a named pipe, not a regular file`, ErrNotRegular},
		{"alloc/data/to-pipe", `"alloc/data/to-pipe" is a named pipe, not a regular file`, ErrNotRegular},
		{"alloc/data/sock", `"alloc/data/sock" is a socket, not a regular file`, ErrNotRegular},
		{"alloc//data/", `"alloc/data" is a directory`, ErrNotRegular},
		{"alloc/data/to-dev", "escapes the allocation directory", ErrEscape},
		{"alloc/data/missing", "alloc/data/missing: no such file or directory", os.ErrNotExist},
	}
	for _, c := range cases {
		done := make(chan error, 1)
		go func() {
			f, err := d.OpenRead(c.path)
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("OpenRead(%q) blocked", c.path)
		}
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("OpenRead(%q) = %v; want %v containing %q", c.path, err, c.is, c.want)
		}
		if strings.Contains(err.Error(), d.AllocDir) {
			t.Errorf("OpenRead(%q) error leaks the host path: %v", c.path, err)
		}
	}
}

// Errors of Stat and List name alloc-relative paths only.
func TestErrorsNameNoHostPath(t *testing.T) {
	d := build(t)
	if err := os.WriteFile(filepath.Join(d.AllocDir, "alloc", "data", "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err1 := d.Stat("alloc/data/missing")
	_, err2 := d.List("alloc/data/file")
	_, err3 := d.List("web/local/nope")
	for _, err := range []error{err1, err2, err3} {
		if err == nil {
			t.Fatal("want an error")
		}
		if strings.Contains(err.Error(), d.AllocDir) || strings.Contains(err.Error(), filepath.Dir(d.AllocDir)) {
			t.Errorf("error leaks the host path: %v", err)
		}
	}
	if !errors.Is(err1, os.ErrNotExist) || !strings.Contains(err1.Error(), "alloc/data/missing") {
		t.Errorf("Stat of a missing file: %v", err1)
	}
	if !errors.Is(err2, syscall.ENOTDIR) {
		t.Errorf("List of a file: %v, want ENOTDIR", err2)
	}
}
