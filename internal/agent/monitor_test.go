package agent

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// A monitor sees lines below the agent's own level, in its own format; a
// slow reader loses lines instead of blocking the logger; stop ends it.
func TestLogMonitor(t *testing.T) {
	var out lockedBuffer
	root := hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: "agent", Level: hclog.Error, Output: &out})
	m := &logMonitor{root: root}
	lines, dropped, stop := m.Monitor(hclog.Debug, false, false)
	sub := root.Named("http")
	sub.Debug("request complete", "path", "/v1/jobs")
	sub.Trace("too fine")
	select {
	case l := <-lines:
		if s := string(l); !strings.Contains(s, "[DEBUG] agent.http: request complete: path=/v1/jobs") {
			t.Fatalf("line %q", s)
		}
	case <-time.After(time.Second):
		t.Fatal("no line")
	}
	if out.b.Len() != 0 {
		t.Fatalf("the agent's own ERROR-level output got %q", out.b.String())
	}

	js, _, stopJSON := m.Monitor(hclog.Info, true, false)
	sub.Info("hello")
	if l := <-js; !strings.Contains(string(l), `"@message":"hello"`) {
		t.Fatalf("json line %q", l)
	}
	stopJSON()

	// Nobody reads: the logger goes on, the surplus is counted.
	done := make(chan struct{})
	go func() {
		for i := 0; i < monitorDepth+100; i++ {
			sub.Debug("burst", "i", i)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("logging blocked on a slow monitor")
	}
	if n := dropped(); n < 100 {
		t.Fatalf("dropped %d, want >= 100", n)
	}
	stop()
	stop() // idempotent
	for len(lines) > 0 {
		<-lines
	}
	sub.Error("after stop")
	if len(lines) != 0 {
		t.Fatal("a stopped monitor still receives lines")
	}
}
