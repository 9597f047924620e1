package httpapi

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// brokenFS streams one frame, then fails (a client agent shutting down) or,
// with hold, keeps the stream open until its caller goes away.
type brokenFS struct {
	fakeFS
	hold bool
	sent chan struct{}
}

func (b *brokenFS) FSLogs(ctx context.Context, allocID, task, logType, origin string, offset int64, follow bool, out chan<- *api.StreamFrame) error {
	out <- &api.StreamFrame{File: "alloc/logs/web.stdout.0", Offset: 4, Data: []byte("one\n")}
	if b.sent != nil {
		close(b.sent)
	}
	if b.hold {
		<-ctx.Done()
		return nil
	}
	return structs.NewErrCoded(503, "client agent shutting down")
}

// followOnce reads a followed log through the api client until it ends: the
// data, and the error (nil: the stream ended as a complete log).
func followOnce(t *testing.T, c *api.Client, during func()) (string, error) {
	t.Helper()
	cancel := make(chan struct{})
	defer close(cancel)
	frames, errCh := c.AllocFS().Logs(&api.Allocation{ID: "a1", NodeID: "node-b"}, true, "web", "stdout", "start", 0, cancel, nil)
	var got strings.Builder
	timeout := time.After(20 * time.Second)
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				return got.String(), nil
			}
			got.Write(f.Data)
			if during != nil {
				during()
				during = nil
			}
		case err := <-errCh:
			return got.String(), err
		case <-timeout:
			t.Fatalf("the stream neither ended nor failed; got %q", got.String())
		}
	}
}

// A followed log whose producer fails after the first frame is not a
// complete log: its reader gets an error naming the cause (JSON frames), or
// a cut connection (plain), never a clean end.
func TestFSLogsErrorAfterFramesIsNotACleanEnd(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.FS = &brokenFS{} })
	got, err := followOnce(t, env.client, nil)
	if got != "one\n" {
		t.Fatalf("frames %q", got)
	}
	if err == nil {
		t.Fatal("the stream ended cleanly after its producer failed: a follower takes it for a finished log")
	}
	if !strings.Contains(err.Error(), "client agent shutting down") {
		t.Fatalf("error %q does not name the cause", err)
	}

	resp, err := http.Get(env.srv.URL + "/v1/client/fs/logs/a1?task=web&type=stdout&follow=true&plain=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "one\n" {
		t.Fatalf("plain: %d %q", resp.StatusCode, b)
	}
	if err == nil {
		t.Fatal("plain stream ended cleanly after its producer failed")
	}
}

// A server relaying a node's followed log whose node connection drops
// mid-stream (the client agent is killed) cuts its own answer: the reader
// gets an error, not a complete (or empty) log.
func TestRelayedLogCutWhenNodeConnectionDrops(t *testing.T) {
	fs := &brokenFS{hold: true, sent: make(chan struct{})}
	node := httptest.NewServer(NewHandler(Config{FS: fs, Stats: fakeStats{id: "node-b"}, Allocs: allocSet{"a1": true}}))
	defer node.Close()
	dialer := &tcpDialer{nodes: map[string]string{"node-b": node.Listener.Addr().String()}}
	env := newEnv(t, func(c *Config) { c.FS = nil; c.Reach = dialer })
	env.rpc.reply("Alloc.GetAlloc", structs.SingleAllocResponse{Alloc: &structs.Allocation{ID: "a1", NodeID: "node-b"}})

	got, err := followOnce(t, env.client, func() { <-fs.sent; node.CloseClientConnections() })
	if got != "one\n" {
		t.Fatalf("frames %q", got)
	}
	if err == nil {
		t.Fatal("the relayed stream ended cleanly when the node's connection dropped")
	}

	// With the node gone, a new request is a clear 5xx, not an empty 200.
	delete(dialer.nodes, "node-b")
	_, err = followOnce(t, env.client, nil)
	if code, _ := structs.ErrorCode(err); err == nil || !strings.Contains(err.Error(), "no path to node node-b") {
		t.Fatalf("node gone: %v (code %d)", err, code)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The relay's complaint about a node stream that dropped goes to the
// agent's logger, at warn, named for the node: never straight to stderr
// past the log level (it printed "httputil: ReverseProxy read error during
// body copy" there through the standard library's default logger).
func TestRelayDropLoggedThroughAgentLogger(t *testing.T) {
	var stderr syncBuffer
	log.SetOutput(&stderr)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })

	for _, level := range []hclog.Level{hclog.Debug, hclog.Error} {
		var agentLog syncBuffer
		logger := hclog.New(&hclog.LoggerOptions{Output: &agentLog, Level: level})
		fs := &brokenFS{hold: true, sent: make(chan struct{})}
		node := httptest.NewServer(NewHandler(Config{FS: fs, Stats: fakeStats{id: "node-b"}, Allocs: allocSet{"a1": true}}))
		dialer := &tcpDialer{nodes: map[string]string{"node-b": node.Listener.Addr().String()}}
		env := newEnv(t, func(c *Config) { c.FS = nil; c.Reach = dialer; c.Logger = logger })
		env.rpc.reply("Alloc.GetAlloc", structs.SingleAllocResponse{Alloc: &structs.Allocation{ID: "a1", NodeID: "node-b"}})

		if _, err := followOnce(t, env.client, func() { <-fs.sent; node.CloseClientConnections() }); err == nil {
			t.Fatal("the relayed stream ended cleanly when the node's connection dropped")
		}
		node.Close()
		env.srv.Close() // waits for the relaying handler to return
		got := agentLog.String()
		if level == hclog.Debug {
			if !strings.Contains(got, "[WARN]") || !strings.Contains(got, "ReverseProxy read error during body copy") ||
				!strings.Contains(got, "node=node-b") {
				t.Errorf("agent log at %s lacks the relay's warning naming the node:\n%s", level, got)
			}
		} else if strings.Contains(got, "ReverseProxy") {
			t.Errorf("agent log at %s shows a warning:\n%s", level, got)
		}
	}
	if s := stderr.String(); strings.Contains(s, "ReverseProxy") {
		t.Errorf("the relay wrote past the agent logger:\n%s", s)
	}
}
