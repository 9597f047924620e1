package httpapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/structs"
)

// fakeExec runs "cat": stdin to stdout, "bye" on stderr, exit code 3. It
// knows one allocation, a1, with one running task, web.
type fakeExec struct{}

func (fakeExec) AllocExec(ctx context.Context, allocID, task string, o drivers.ExecOptions) (int, error) {
	if allocID != "a1" {
		return -1, structs.NewErrCoded(404, "Unknown allocation %q", allocID)
	}
	if o.Command[0] == "fail" {
		return -1, io.ErrUnexpectedEOF
	}
	if _, err := io.Copy(o.Stdout, o.Stdin); err != nil {
		return -1, err
	}
	o.Stderr.Write([]byte("bye"))
	return 3, nil
}

func execURL(srv, query string) string {
	return "ws" + strings.TrimPrefix(srv, "http") + "/v1/client/allocation/a1/exec?" + query
}

// A session: stdin frames reach the command, its stdout and stderr come
// back as frames, then its exit code.
func TestExecSession(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.Exec = fakeExec{} })
	q := url.Values{"task": {"web"}, "command": {`["cat"]`}}
	conn, _, err := websocket.DefaultDialer.Dial(execURL(env.srv.URL, q.Encode()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.WriteJSON(api.ExecStreamingInput{Stdin: &api.ExecStreamingIOOperation{Data: []byte("ping\n")}})
	conn.WriteJSON(api.ExecStreamingInput{Stdin: &api.ExecStreamingIOOperation{Close: true}})
	var stdout, stderr strings.Builder
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var f api.ExecStreamingOutput
		if err := conn.ReadJSON(&f); err != nil {
			t.Fatalf("no exit frame: %v (stdout %q)", err, stdout.String())
		}
		if f.Stdout != nil {
			stdout.Write(f.Stdout.Data)
		}
		if f.Stderr != nil {
			stderr.Write(f.Stderr.Data)
		}
		if f.Exited {
			if f.Result == nil || f.Result.ExitCode != 3 {
				t.Fatalf("exit frame %+v", f)
			}
			break
		}
	}
	if stdout.String() != "ping\n" || stderr.String() != "bye" {
		t.Fatalf("stdout %q stderr %q", stdout.String(), stderr.String())
	}

	// What the client refuses closes the socket with the reason, which
	// Nomad's api client returns as the error.
	q.Set("command", `["sh"]`)
	conn3, _, err := websocket.DefaultDialer.Dial(strings.Replace(execURL(env.srv.URL, q.Encode()), "/a1/", "/a2/", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn3.Close()
	var f3 api.ExecStreamingOutput
	if err := conn3.ReadJSON(&f3); !websocket.IsCloseError(err, websocket.ClosePolicyViolation) || err.(*websocket.CloseError).Text != `Unknown allocation "a2"` {
		t.Fatalf("want a close with the refusal, got %v", err)
	}

	// A failing exec closes the socket with the reason.
	q.Set("command", `["fail"]`)
	conn2, _, err := websocket.DefaultDialer.Dial(execURL(env.srv.URL, q.Encode()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	var f api.ExecStreamingOutput
	err = conn2.ReadJSON(&f)
	if !websocket.IsCloseError(err, websocket.CloseInternalServerErr) || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Fatalf("want a close with the error, got %v", err)
	}
}

// Bad requests are refused with a status and a reason before any upgrade.
func TestExecRequestErrors(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.Exec = fakeExec{} })
	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{"/v1/client/allocation/a1/exec?command=%5B%22sh%22%5D", 400, "must provide task name"},
		{"/v1/client/allocation/a1/exec?task=web", 400, "command must be a non-empty JSON list"},
		{"/v1/client/allocation/a1/exec?task=web&command=sh", 400, "command must be a non-empty JSON list"},
		{"/v1/client/allocation/a1/exec?task=web&command=%5B%22sh%22%5D&tty=maybe", 400, "tty must be true or false"},
		{"/v1/client/allocation/a1/pause", 404, "Not found"},
	} {
		code, _, body := env.raw(t, "GET", tc.path, "")
		if code != tc.code || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: %d %q, want %d %q", tc.path, code, body, tc.code, tc.msg)
		}
	}
	if code, _, _ := env.raw(t, http.MethodPost, "/v1/client/allocation/a1/exec?task=web&command=%5B%22sh%22%5D", ""); code != 405 {
		t.Errorf("POST answered %d", code)
	}
}

// An agent whose client does not run the allocation (or that runs no
// client) says whether the allocation exists and where, as the close
// reason Nomad's api client returns.
func TestExecElsewhere(t *testing.T) {
	closeReason := func(env *testEnv, alloc string) string {
		t.Helper()
		u := "ws" + strings.TrimPrefix(env.srv.URL, "http") + "/v1/client/allocation/" + alloc + "/exec?task=web&command=%5B%22sh%22%5D"
		conn, _, err := websocket.DefaultDialer.Dial(u, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var f api.ExecStreamingOutput
		err = conn.ReadJSON(&f)
		ce, ok := err.(*websocket.CloseError)
		if !ok {
			t.Fatalf("want a close, got %v", err)
		}
		return ce.Text
	}
	noClient := newEnv(t, nil)
	if got := closeReason(noClient, "a9"); got != `Unknown allocation "a9"` {
		t.Errorf("unknown allocation: %q", got)
	}
	noClient.rpc.reply("Alloc.GetAlloc", structs.SingleAllocResponse{Alloc: &structs.Allocation{ID: "a9", NodeID: "n9"}})
	if got := closeReason(noClient, "a9"); !strings.Contains(got, "allocation a9 runs on node n9, not on this agent's client") {
		t.Errorf("allocation elsewhere: %q", got)
	}
	withClient := newEnv(t, func(c *Config) { c.Exec = fakeExec{} })
	withClient.rpc.reply("Alloc.GetAlloc", structs.SingleAllocResponse{Alloc: &structs.Allocation{ID: "a2", NodeID: "n2"}})
	if got := closeReason(withClient, "a2"); !strings.Contains(got, "runs on node n2") {
		t.Errorf("allocation on another node: %q", got)
	}
}

// deafExec is a command that never reads its stdin and ends only when its
// context does ("sleep 3600").
type deafExec struct{ ended chan struct{} }

func (d deafExec) AllocExec(ctx context.Context, allocID, task string, o drivers.ExecOptions) (int, error) {
	<-ctx.Done()
	close(d.ended)
	return -1, ctx.Err()
}

// A caller that leaves after sending stdin the command does not read ends
// the command: the reader is stuck handing that stdin over and never sees
// the websocket close, so the heartbeat's failing write must. Before, the
// command ran on until it exited by itself (`sleep`, `tail -f`: never).
func TestExecCallerGoneWhileStdinUnreadEndsTheCommand(t *testing.T) {
	ex := deafExec{ended: make(chan struct{})}
	env := newEnv(t, func(c *Config) { c.Exec = ex; c.execHeartbeat = 100 * time.Millisecond })
	q := url.Values{"task": {"web"}, "command": {`["sleep","3600"]`}}
	conn, _, err := websocket.DefaultDialer.Dial(execURL(env.srv.URL, q.Encode()), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Stdin nobody reads (the pipe to the command holds none of it).
	if err := conn.WriteJSON(api.ExecStreamingInput{Stdin: &api.ExecStreamingIOOperation{Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	conn.UnderlyingConn().(*net.TCPConn).SetLinger(0)
	conn.Close()
	select {
	case <-ex.ended:
	case <-time.After(20 * time.Second):
		t.Fatal("the caller left 20 s ago and the command still runs")
	}
}
