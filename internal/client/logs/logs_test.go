package logs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func readAll(t *testing.T, files []string) string {
	t.Helper()
	var b bytes.Buffer
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

func TestRotatorRotatesAndKeepsMaxFiles(t *testing.T) {
	dir := t.TempDir()
	r, err := newRotator(dir, "web.stdout", 3, 10)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, chunk := range []string{"abc", "defghijklmnopqrstu", "v", "wxyz0123456789", "ABCDEFGHI"} {
		n, err := r.Write([]byte(chunk))
		if err != nil || n != len(chunk) {
			t.Fatalf("write %q: %d %v", chunk, n, err)
		}
		all.WriteString(chunk)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// 45 bytes at 10 per file: .0-.3 full, .4 holds 5; only .2-.4 remain.
	files, err := FindLogFiles(dir, "web", "stdout")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"web.stdout.2", "web.stdout.3", "web.stdout.4"}
	if len(files) != len(want) {
		t.Fatalf("files %v, want %v", files, want)
	}
	for i, f := range files {
		if filepath.Base(f) != want[i] {
			t.Errorf("file %d: %s, want %s", i, f, want[i])
		}
		if fi, _ := os.Stat(f); i < 2 && fi.Size() != 10 {
			t.Errorf("%s: size %d", f, fi.Size())
		}
	}
	if got := readAll(t, files); got != all.String()[20:] {
		t.Errorf("kept %q, want the newest %q", got, all.String()[20:])
	}
	if _, err := r.Write([]byte("x")); err == nil {
		t.Error("write after close succeeded")
	}

	// A new rotator (client restart) continues the newest file.
	r2, err := newRotator(dir, "web.stdout", 3, 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Write([]byte("1234567")); err != nil {
		t.Fatal(err)
	}
	r2.Close()
	files, _ = FindLogFiles(dir, "web", "stdout")
	if len(files) != 3 || filepath.Base(files[2]) != "web.stdout.5" {
		t.Fatalf("after restart: %v", files)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "web.stdout.4")); string(b) != "EFGHI12345" {
		t.Errorf("continued file: %q", b)
	}
}

func TestNewRotatorValidates(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ files, mb int }{{0, 1}, {1, 0}} {
		if _, err := NewRotator(dir, "x", c.files, c.mb); err == nil {
			t.Errorf("NewRotator(%d files, %d MB) accepted", c.files, c.mb)
		}
	}
	r, err := NewRotator(dir, "x.stderr", 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("z"), 1<<20+1)
	if _, err := r.Write(big); err != nil {
		t.Fatal(err)
	}
	r.Close()
	files, _ := FindLogFiles(dir, "x", "stderr")
	if len(files) != 2 {
		t.Fatalf("1 MiB + 1 byte: %v", files)
	}
}

func TestFindLogFilesOrder(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"web.stdout.10", "web.stdout.2", "web.stdout.0", "web2.stdout.1",
		".web.stdout.fifo", "web.stdout.x", "web.stderr.3", "web.stdout."} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := FindLogFiles(dir, "web", "stdout")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	if strings.Join(names, ",") != "web.stdout.0,web.stdout.2,web.stdout.10" {
		t.Errorf("order: %v", names)
	}
	if _, err := FindLogFiles(dir, "web", "stdin"); err == nil {
		t.Error("bad type accepted")
	}
}

func TestCollectorCapturesAcrossWritersAndDrains(t *testing.T) {
	dir := t.TempDir()
	c, err := startCollector(dir, "web", 5, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if c.StdoutPath() != filepath.Join(dir, ".web.stdout.fifo") || c.StderrPath() != filepath.Join(dir, ".web.stderr.fifo") {
		t.Fatalf("paths %s %s", c.StdoutPath(), c.StderrPath())
	}
	if fi, err := os.Stat(c.StdoutPath()); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("stdout is not a fifo: %v %v", fi, err)
	}
	// A real process writing both streams, then exiting.
	out, _ := os.OpenFile(c.StdoutPath(), os.O_WRONLY|os.O_APPEND, 0)
	errf, _ := os.OpenFile(c.StderrPath(), os.O_WRONLY|os.O_APPEND, 0)
	cmd := exec.Command("/bin/sh", "-c", "echo out1; echo err1 >&2")
	cmd.Stdout, cmd.Stderr = out, errf
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	out.Close()
	errf.Close()
	// Output written after the task exited (its writers all closed): a
	// restarted task, or a straggling child, still gets collected.
	w, err := os.OpenFile(c.StdoutPath(), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("y", 60000) + "\n"
	if _, err := w.WriteString("out2\n" + big); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// Close right away: what is still in the pipe must be drained.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	files, _ := FindLogFiles(dir, "web", "stdout")
	if got := readAll(t, files); got != "out1\nout2\n"+big {
		t.Errorf("stdout: %d bytes, prefix %q", len(got), got[:min(len(got), 20)])
	}
	files, _ = FindLogFiles(dir, "web", "stderr")
	if got := readAll(t, files); got != "err1\n" {
		t.Errorf("stderr: %q", got)
	}
	if _, err := os.Stat(c.StdoutPath()); !os.IsNotExist(err) {
		t.Errorf("fifo left behind: %v", err)
	}
}

func TestCollectorRestartAppends(t *testing.T) {
	dir := t.TempDir()
	for i, line := range []string{"first\n", "second\n"} {
		c, err := StartCollector(dir, "db", 2, 1)
		if err != nil {
			t.Fatal(err)
		}
		w, err := os.OpenFile(c.StdoutPath(), os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		w.WriteString(line)
		w.Close()
		if err := c.Close(); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	files, _ := FindLogFiles(dir, "db", "stdout")
	if got := readAll(t, files); got != "first\nsecond\n" {
		t.Errorf("after restart: %q", got)
	}
}

// A task can write the log dir: a named pipe at the next log file's name
// must not block the collector (nobody reads it), and a symlink there must
// not make the client append the task's output to a file outside the alloc
// dir.
func TestRotatorReplacesWhatATaskPutAtItsNames(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := newRotator(dir, "web.stdout", 5, 4)
	if err != nil {
		t.Fatal(err)
	}
	// The task, while running, puts these at the next names.
	if err := syscall.Mkfifo(filepath.Join(dir, "web.stdout.1"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "web.stdout.2")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Write([]byte("aaaabbbbcccc")) // .0, then .1 and .2
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("write blocked on a named pipe at a log file's name")
	}
	r.Close()
	if b, _ := os.ReadFile(outside); string(b) != "precious\n" {
		t.Fatalf("file outside the log dir was written through a symlink: %q", b)
	}
	for i, want := range []string{"aaaa", "bbbb", "cccc"} {
		p := filepath.Join(dir, "web.stdout."+strconv.Itoa(i))
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%s: %v %v, want a regular file", p, fi, err)
		}
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s holds %q, want %q", p, b, want)
		}
	}
}
