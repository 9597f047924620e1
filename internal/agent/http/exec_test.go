package httpapi

import (
	"context"
	"io"
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

func (fakeExec) ExecCheck(allocID, task string) error {
	if allocID != "a1" {
		return structs.NewErrCoded(404, "unknown allocation ID %q", allocID)
	}
	if task != "web" {
		return structs.NewErrCoded(404, "task %q not found in allocation a1", task)
	}
	return nil
}

func (fakeExec) AllocExec(ctx context.Context, allocID, task string, o drivers.ExecOptions) (int, error) {
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
		{"/v1/client/allocation/a2/exec?task=web&command=%5B%22sh%22%5D", 404, `unknown allocation ID "a2"`},
		{"/v1/client/allocation/a1/exec?task=db&command=%5B%22sh%22%5D", 404, `task "db" not found`},
		{"/v1/client/allocation/a1/stats", 404, "Invalid path"},
	} {
		code, _, body := env.raw(t, "GET", tc.path, "")
		if code != tc.code || !strings.Contains(body, tc.msg) {
			t.Errorf("%s: %d %q, want %d %q", tc.path, code, body, tc.code, tc.msg)
		}
	}
	noClient := newEnv(t, nil)
	if code, _, body := noClient.raw(t, "GET", "/v1/client/allocation/a1/exec?task=web&command=%5B%22sh%22%5D", ""); code != 400 || !strings.Contains(body, "no client") {
		t.Errorf("without a client: %d %q", code, body)
	}
	if code, _, _ := env.raw(t, http.MethodPost, "/v1/client/allocation/a1/exec?task=web&command=%5B%22sh%22%5D", ""); code != 405 {
		t.Errorf("POST answered %d", code)
	}
}
