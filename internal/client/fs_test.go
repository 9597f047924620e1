package client

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/logs"
	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/rawexec"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/nomad/api"
)

func wantCode(t *testing.T, err error, code int) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error with code %d, got nil", code)
	}
	if got, msg := structs.ErrorCode(err); got != code {
		t.Fatalf("want code %d, got %d (%s)", code, got, msg)
	}
}

// collect gathers frame data from a stream in the background.
type collector struct {
	mu     sync.Mutex
	data   strings.Builder
	frames []*api.StreamFrame
	done   chan error
}

func collect(run func(out chan<- *api.StreamFrame) error) *collector {
	c := &collector{done: make(chan error, 1)}
	out := make(chan *api.StreamFrame)
	errCh := make(chan error, 1)
	go func() { errCh <- run(out); close(out) }()
	go func() {
		for f := range out {
			c.mu.Lock()
			c.data.Write(f.Data)
			c.frames = append(c.frames, f)
			c.mu.Unlock()
		}
		c.done <- <-errCh // only after every frame was recorded
	}()
	return c
}

func (c *collector) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.data.String()
}

func (c *collector) waitText(t *testing.T, want string) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() error {
		if got := c.text(); got != want {
			return testutil.Errorf("got %q, want %q", got, want)
		}
		return nil
	})
}

func (c *collector) waitDone(t *testing.T) error {
	t.Helper()
	select {
	case err := <-c.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("stream did not end")
		return nil
	}
}

func TestClient_FS(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	a := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"stdout_string": "hello\n", "run_for": "-1s"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)

	// List / Stat / ReadAt.
	var list []*api.AllocFileInfo
	testutil.WaitFor(t, 10*time.Second, func() error {
		var err error
		list, err = tc.FSList(a.ID, "/alloc/logs")
		if err != nil {
			return err
		}
		for _, fi := range list {
			if fi.Name == "t.stdout.0" && fi.Size == 6 {
				return nil
			}
		}
		return testutil.Errorf("no t.stdout.0 of 6 bytes in %+v", list)
	})
	root, err := tc.FSList(a.ID, "/")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, fi := range root {
		names[fi.Name] = fi.IsDir
	}
	if !names["alloc"] || !names["t"] {
		t.Fatalf("alloc dir root %v", names)
	}
	st, err := tc.FSStat(a.ID, "alloc/logs/t.stdout.0")
	if err != nil || st.Size != 6 || st.IsDir {
		t.Fatalf("stat %+v %v", st, err)
	}
	rc, err := tc.FSReadAt(a.ID, "/alloc/logs/t.stdout.0", 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "ell" {
		t.Fatalf("readat %q", b)
	}
	rc, _ = tc.FSReadAt(a.ID, "/alloc/logs/t.stdout.0", 2, 0)
	if b, _ := io.ReadAll(rc); string(b) != "llo\n" {
		t.Fatalf("readat to EOF %q", b)
	}
	rc.Close()

	// Errors.
	_, err = tc.FSList("nope", "/")
	wantCode(t, err, 404)
	_, err = tc.FSStat(a.ID, "../../etc/passwd")
	wantCode(t, err, 400)
	_, err = tc.FSStat(a.ID, "/alloc/missing")
	wantCode(t, err, 404)
	ctx := context.Background()
	wantCode(t, tc.FSLogs(ctx, a.ID, "ghost", "stdout", "start", 0, false, make(chan *api.StreamFrame)), 404)
	wantCode(t, tc.FSLogs(ctx, a.ID, "t", "stdin", "start", 0, false, make(chan *api.StreamFrame)), 400)
	wantCode(t, tc.FSLogs(ctx, "nope", "t", "stdout", "start", 0, false, make(chan *api.StreamFrame)), 404)

	// Logs without follow end after the data.
	c := collect(func(out chan<- *api.StreamFrame) error {
		return tc.FSLogs(ctx, a.ID, "t", "stdout", "start", 0, false, out)
	})
	if err := c.waitDone(t); err != nil {
		t.Fatal(err)
	}
	if c.text() != "hello\n" {
		t.Fatalf("logs %q", c.text())
	}

	// Follow receives lines written later.
	fctx, cancel := context.WithCancel(ctx)
	c = collect(func(out chan<- *api.StreamFrame) error {
		return tc.FSLogs(fctx, a.ID, "t", "stdout", "end", 2, true, out)
	})
	c.waitText(t, "o\n")
	ar, _ := tc.getAllocRunner(a.ID)
	fifo, err := os.OpenFile(logs.FifoPath(ar.AllocDir().LogDir(), "t", "stdout"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fifo.WriteString("later line\n")
	fifo.Close()
	c.waitText(t, "o\nlater line\n")
	cancel()
	if err := c.waitDone(t); err != nil {
		t.Fatalf("follow ended with %v", err)
	}

	// Stream of a single file, from the end.
	c = collect(func(out chan<- *api.StreamFrame) error {
		return tc.FSStream(ctx, a.ID, "/alloc/logs/t.stdout.0", "end", 5, false, out)
	})
	c.waitDone(t)
	if c.text() != "line\n" {
		t.Fatalf("stream from end %q", c.text())
	}

	// Logs across rotated files of a finished task (no driver: it fails
	// at once, and nothing else writes its log files).
	nodrv := testutil.MockTask("u", nil)
	nodrv.Driver = "none"
	b2 := tc.place(structs.JobTypeBatch, nodrv)
	tc.waitServerStatus(t, b2.ID, structs.AllocClientStatusFailed)
	ar2, _ := tc.getAllocRunner(b2.ID)
	logDir := ar2.AllocDir().LogDir()
	os.WriteFile(filepath.Join(logDir, "u.stdout.0"), []byte("first-"), 0o644)
	os.WriteFile(filepath.Join(logDir, "u.stdout.1"), []byte("second"), 0o644)
	for _, tcase := range []struct {
		origin string
		offset int64
		want   string
	}{{"start", 0, "first-second"}, {"start", 3, "st-second"}, {"end", 9, "st-second"}, {"end", 3, "ond"}} {
		c = collect(func(out chan<- *api.StreamFrame) error {
			return tc.FSLogs(ctx, b2.ID, "u", "stdout", tcase.origin, tcase.offset, true, out) // dead task: follow ends
		})
		if err := c.waitDone(t); err != nil {
			t.Fatal(err)
		}
		if c.text() != tcase.want {
			t.Fatalf("%s/%d: got %q want %q", tcase.origin, tcase.offset, c.text(), tcase.want)
		}
	}
}

func TestClient_RawExecEndToEnd(t *testing.T) {
	drv := rawexec.New(rawexec.Config{Enabled: true})
	if fp := drv.Fingerprint(); fp.Health != drivers.HealthHealthy {
		if os.Getenv("CI") != "" {
			t.Fatalf("raw_exec unhealthy in CI: %s", fp.HealthDescription)
		}
		t.Skipf("raw_exec not healthy here: %s", fp.HealthDescription)
	}
	tc := newTestClient(t, func(c *Config) { c.Drivers = []drivers.Driver{drv} })
	tc.waitReady(t)
	task := &structs.Task{Name: "echo", Driver: "raw_exec", KillTimeout: time.Second, Config: map[string]any{
		"command": "/bin/sh", "args": []any{"-c", "echo hello from ${NOMAD_TASK_NAME} in $NOMAD_ALLOC_ID"},
	}}
	a := tc.place(structs.JobTypeBatch, task)
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusComplete)
	c := collect(func(out chan<- *api.StreamFrame) error {
		return tc.FSLogs(context.Background(), a.ID, "echo", "stdout", "start", 0, false, out)
	})
	if err := c.waitDone(t); err != nil {
		t.Fatal(err)
	}
	if want := "hello from echo in " + a.ID + "\n"; c.text() != want {
		t.Fatalf("logs %q, want %q", c.text(), want)
	}
}

// A task can make named pipes in its alloc dir (and the log collector's own
// FIFOs live there too): cat, readat, stream and logs refuse them at once
// with a 400 naming the alloc-relative path, instead of blocking on an open
// nobody answers; and no fs error names the alloc dir's host path.
func TestClient_FSRefusesNamedPipes(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	a := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"stdout_string": "hello\n", "run_for": "-1s"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	nodrv := testutil.MockTask("u", nil)
	nodrv.Driver = "none"
	b := tc.place(structs.JobTypeBatch, nodrv)
	tc.waitServerStatus(t, b.ID, structs.AllocClientStatusFailed)

	ar, _ := tc.getAllocRunner(a.ID)
	data, err := ar.AllocDir().Resolve("alloc/data")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(data, "pipe"), 0o666); err != nil {
		t.Fatal(err)
	}
	arB, _ := tc.getAllocRunner(b.ID)
	if err := syscall.Mkfifo(filepath.Join(arB.AllocDir().LogDir(), "u.stdout.0"), 0o666); err != nil {
		t.Fatal(err)
	}
	hostRoot := filepath.Dir(filepath.Dir(data)) // <allocRoot>/<allocID>

	ctx := context.Background()
	noHostPath := func(what string, err error) {
		t.Helper()
		if err != nil && strings.Contains(err.Error(), hostRoot) {
			t.Errorf("%s: error names the host path: %v", what, err)
		}
	}
	within := func(what string, f func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			noHostPath(what, err)
			return err
		case <-time.After(10 * time.Second):
			t.Fatalf("%s blocked", what)
			return nil
		}
	}
	for _, p := range []string{"/alloc/data/pipe", "alloc/logs/.t.stdout.fifo"} {
		want := strings.TrimPrefix(p, "/")
		err := within("readat "+p, func() error {
			rc, err := tc.FSReadAt(a.ID, p, 0, 0)
			if rc != nil {
				rc.Close()
			}
			return err
		})
		wantCode(t, err, 400)
		if !strings.Contains(err.Error(), `"`+want+`" is a named pipe, not a regular file`) {
			t.Errorf("readat %s: %v", p, err)
		}
		err = within("stream "+p, func() error {
			return tc.FSStream(ctx, a.ID, p, "start", 0, true, make(chan *api.StreamFrame, 8))
		})
		wantCode(t, err, 400)
	}
	err = within("logs on a named pipe", func() error {
		return tc.FSLogs(ctx, b.ID, "u", "stdout", "start", 0, true, make(chan *api.StreamFrame, 8))
	})
	wantCode(t, err, 400)
	if !strings.Contains(err.Error(), `"alloc/logs/u.stdout.0" is a named pipe`) {
		t.Errorf("logs: %v", err)
	}

	// A log file that is a symlink out of the alloc dir is not followed.
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("host secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(arB.AllocDir().LogDir(), "u.stderr.0")); err != nil {
		t.Fatal(err)
	}
	c := collect(func(out chan<- *api.StreamFrame) error {
		return tc.FSLogs(ctx, b.ID, "u", "stderr", "start", 0, false, out)
	})
	err = c.waitDone(t)
	wantCode(t, err, 400)
	if c.text() != "" {
		t.Fatalf("logs followed a symlink out of the alloc dir: %q", c.text())
	}

	// Other errors name alloc-relative paths too.
	_, err = tc.FSList(a.ID, "/alloc/nope")
	wantCode(t, err, 404)
	noHostPath("ls of a missing dir", err)
	_, err = tc.FSStat(a.ID, "/alloc/data/nope")
	wantCode(t, err, 404)
	noHostPath("stat of a missing file", err)
	_, err = tc.FSReadAt(a.ID, "/alloc/data/nope", 0, 0)
	wantCode(t, err, 404)
	noHostPath("readat of a missing file", err)
	_, err = tc.FSList(a.ID, "/alloc/logs/t.stdout.0")
	wantCode(t, err, 400)
	noHostPath("ls of a file", err)
}
