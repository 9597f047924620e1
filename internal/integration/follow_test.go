package integration

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// logFollow is an `alloc logs -f` process started against one agent.
type logFollow struct {
	name     string // which agent it talks to, for messages
	out, err *syncBuffer
	exit     chan error
}

func startLogFollow(t *testing.T, name string, httpPort int, allocID, task string) *logFollow {
	t.Helper()
	cmd := exec.Command(droverBin, "alloc", "logs", "-f", allocID, task)
	cmd.Env = append(os.Environ(), fmt.Sprintf("NOMAD_ADDR=http://127.0.0.1:%d", httpPort))
	f := &logFollow{name: name, out: &syncBuffer{}, err: &syncBuffer{}, exit: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = f.out, f.err
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { f.exit <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-f.exit })
	waitFor(t, 20*time.Second, "alloc logs -f streaming "+name, func() bool { return f.lines() > 0 })
	return f
}

func (f *logFollow) lines() int { return strings.Count(f.out.String(), "\n") }

// running fails the test when the follower has exited: the followed task
// runs on, so it must not (it took a restart for the end of the log).
func (f *logFollow) running(t *testing.T, when string) {
	t.Helper()
	select {
	case err := <-f.exit:
		f.exit <- err
		t.Fatalf("alloc logs -f %s exited (%v) %s, though the task runs on: %d lines followed; its stderr: %q",
			f.name, err, when, f.lines(), f.err.String())
	default:
	}
}

// caughtUp waits until the follower printed about all of the log at path
// (20 lines of slack for what is in flight), then checks it printed exactly
// the log's beginning.
func (f *logFollow) caughtUp(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		f.running(t, "after the restarts")
		b, _ := os.ReadFile(path)
		if f.lines() > 0 && f.lines() >= strings.Count(string(b), "\n")-20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alloc logs -f %s did not catch up: %d lines followed, %d in the log; its stderr: %q",
				f.name, f.lines(), strings.Count(string(b), "\n"), f.err.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The follower's output first, the log after: the task writes on
	// and the follower prints on, so only a log read later than the
	// output is sure to hold all of it.
	got := f.out.String()
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), got) {
		t.Fatalf("alloc logs -f %s output is not the log: %d bytes followed, %d in the log (stderr %q)", f.name, len(got), len(b), f.err.String())
	}
	t.Logf("alloc logs -f %s followed %d lines across both restarts; it said: %q", f.name, f.lines(), strings.TrimSpace(f.err.String()))
}
