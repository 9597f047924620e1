package agent

import (
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// While the agent shuts down, a second SIGINT or SIGTERM hurries the
// shutdown (drain and shutdown delays skipped) and a third exits at once
// with status 1; a SIGHUP counts for neither. Before, every later signal
// was swallowed and an agent waiting out a long drain deadline or
// shutdown_delay could only be SIGKILLed.
func TestWatchShutdownSignals_SecondHurriesThirdExits(t *testing.T) {
	sigs := make(chan os.Signal, 4)
	var hurried atomic.Int32
	exited := make(chan int, 1)
	stop := watchShutdownSignals(sigs, func() { hurried.Add(1) }, func(code int) { exited <- code }, hclog.NewNullLogger())
	defer stop()

	sigs <- syscall.SIGHUP
	sigs <- syscall.SIGTERM
	deadline := time.Now().Add(5 * time.Second)
	for hurried.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if hurried.Load() != 1 {
		t.Fatalf("a second signal hurried the shutdown %d times, want 1", hurried.Load())
	}
	select {
	case code := <-exited:
		t.Fatalf("exited (%d) on the second signal", code)
	default:
	}
	sigs <- os.Interrupt
	select {
	case code := <-exited:
		if code != 1 {
			t.Fatalf("exit status %d, want 1", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a third signal did not exit")
	}
	if hurried.Load() != 1 {
		t.Fatalf("hurried %d times, want 1", hurried.Load())
	}
}
