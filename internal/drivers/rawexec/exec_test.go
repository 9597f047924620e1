package rawexec

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/drivers"
)

// syncBuf is a goroutine-safe buffer.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startSleeper(t *testing.T, d *Driver, id string, env map[string]string) *drivers.TaskConfig {
	t.Helper()
	tc := newTask(t, id, map[string]any{"command": "/bin/sh", "args": []any{"-c", "sleep 600"}}, env)
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(tc.ID, true) })
	return tc
}

// A command run in a task sees the task's environment and directory and
// its exit code comes back; stdin reaches it.
func TestExecTaskOutputExitCodeAndStdin(t *testing.T) {
	for name, cfg := range trackerCases(t) {
		t.Run(name, func(t *testing.T) {
			d := New(cfg)
			tc := startSleeper(t, d, "exec-"+name, map[string]string{"PATH": "/usr/bin:/bin", "GREETING": "hello-from-task"})
			var out, errb syncBuf
			code, err := d.ExecTask(context.Background(), tc.ID, drivers.ExecOptions{
				Command: []string{"/bin/sh", "-c", `echo "$GREETING $(pwd)"; read line; echo "got $line"; echo oops >&2; exit 7`},
				Stdin:   strings.NewReader("typed\n"), Stdout: &out, Stderr: &errb,
			})
			if err != nil {
				t.Fatal(err)
			}
			if code != 7 {
				t.Fatalf("exit code %d, want 7", code)
			}
			want := "hello-from-task " + tc.TaskDir + "\ngot typed\n"
			if out.String() != want || errb.String() != "oops\n" {
				t.Fatalf("stdout %q (want %q), stderr %q", out.String(), want, errb.String())
			}
		})
	}
}

// With a TTY the command has a terminal (isatty, the size asked for), and
// cancelling the session kills it.
func TestExecTaskTTYAndCancel(t *testing.T) {
	d := New(Config{Enabled: true})
	tc := startSleeper(t, d, "exec-tty", nil)
	var out syncBuf
	stdinR, stdinW := io.Pipe()
	resize := make(chan drivers.TerminalSize, 1)
	resize <- drivers.TerminalSize{Height: 33, Width: 101}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := d.ExecTask(ctx, tc.ID, drivers.ExecOptions{Command: []string{"/bin/sh"}, Tty: true,
			Stdin: stdinR, Stdout: &out, Resize: resize})
		done <- result{code, err}
	}()
	// Poll until the resize has been applied, then ask the shell.
	waitFor(t, 10*time.Second, "the terminal's size", func() bool {
		_, _ = io.WriteString(stdinW, "stty size; test -t 0 && echo IS-A-TTY\n")
		time.Sleep(100 * time.Millisecond)
		return strings.Contains(out.String(), "33 101") && strings.Contains(out.String(), "IS-A-TTY")
	})
	_, _ = io.WriteString(stdinW, "exit 3\n")
	select {
	case r := <-done:
		if r.err != nil || r.code != 3 {
			t.Fatalf("exit %d, %v; want 3", r.code, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the shell did not exit")
	}

	// A session whose caller goes away ends.
	stdinR2, _ := io.Pipe()
	go func() {
		code, err := d.ExecTask(ctx, tc.ID, drivers.ExecOptions{Command: []string{"/bin/sleep", "600"}, Tty: true, Stdin: stdinR2, Stdout: io.Discard})
		done <- result{code, err}
	}()
	time.Sleep(200 * time.Millisecond) // let it start; the assertion below polls
	cancel()
	select {
	case r := <-done:
		if r.code != 128+int(syscall.SIGKILL) {
			t.Fatalf("cancelled exec: code %d, %v", r.code, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled exec kept running")
	}
}

// Stats report the resident memory of the task's processes and their CPU.
func TestTaskStatsMemoryAndCPU(t *testing.T) {
	d := New(Config{Enabled: true})
	// A busy loop and a shell holding ~some memory.
	tc := newTask(t, "stats", map[string]any{"command": "/bin/sh", "args": []any{"-c", "while :; do :; done"}}, nil)
	tc.CPUTotalCompute = 2000
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	defer d.DestroyTask(tc.ID, true)
	var u *drivers.TaskResourceUsage
	waitFor(t, 10*time.Second, "a busy CPU sample", func() bool {
		var err error
		u, err = d.TaskStats(context.Background(), tc.ID)
		if err != nil {
			t.Fatal(err)
		}
		return u.CPU.Percent > 20
	})
	if u.Memory.RSS == 0 || u.CPU.TotalTicks <= 0 || u.CPU.UserMode <= 0 {
		t.Fatalf("usage %+v", u)
	}
}

// The task's user is honoured: the task and exec'd commands run as it, and
// the files they write are its.
func TestTaskUser(t *testing.T) {
	requireRoot(t, "running a task as another user")
	d := New(Config{Enabled: true})
	dir, err := os.MkdirTemp("", "rawexec-user-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	tc := newTask(t, "user", map[string]any{"command": "/bin/sh", "args": []any{"-c", "id -u > out; id -G > groups; sleep 600"}}, nil)
	tc.TaskDir = dir
	tc.User = "nobody"
	if _, err := d.StartTask(tc); err != nil {
		t.Fatal(err)
	}
	defer d.DestroyTask(tc.ID, true)
	nobody, err := resolveUser("nobody")
	if err != nil || nobody == nil {
		t.Fatalf("nobody: %v", err)
	}
	var st syscall.Stat_t
	waitFor(t, 10*time.Second, "the task's file", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "groups"))
		return len(b) > 0
	})
	if err := syscall.Stat(filepath.Join(dir, "out"), &st); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "out"))
	if st.Uid != nobody.UID || strings.TrimSpace(string(b)) != strconv.Itoa(int(nobody.UID)) {
		t.Fatalf("file owned by %d, task's uid %q; want %d", st.Uid, b, nobody.UID)
	}
	if g, _ := os.ReadFile(filepath.Join(dir, "groups")); strings.Contains(" "+string(g)+" ", " 0 ") {
		t.Fatalf("the task kept root's group: %q", g)
	}
	var out syncBuf
	if code, err := d.ExecTask(context.Background(), tc.ID, drivers.ExecOptions{Command: []string{"id", "-u"}, Stdout: &out}); err != nil || code != 0 {
		t.Fatalf("exec: %d %v", code, err)
	}
	if strings.TrimSpace(out.String()) != strconv.Itoa(int(nobody.UID)) {
		t.Fatalf("exec ran as %q", out.String())
	}
}

// A user that cannot be honoured refuses the task, saying why.
func TestTaskUserRefused(t *testing.T) {
	d := New(Config{Enabled: true})
	tc := newTask(t, "nouser", map[string]any{"command": "/bin/true"}, nil)
	tc.User = "no-such-user-drover"
	if _, err := d.StartTask(tc); err == nil || !strings.Contains(err.Error(), `task user "no-such-user-drover": no such user`) {
		t.Fatalf("unknown user: %v", err)
	}
	defer func(f func() int) { geteuid = f }(geteuid)
	geteuid = func() int { return 4242 }
	tc = newTask(t, "notroot", map[string]any{"command": "/bin/true"}, nil)
	tc.User = "nobody"
	if _, err := d.StartTask(tc); err == nil || !strings.Contains(err.Error(), "only when the agent runs as root") {
		t.Fatalf("agent not root: %v", err)
	}
}
