package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// rpcCall is one recorded RPC.
type rpcCall struct {
	Method string
	Args   any
}

// fakeRPC records calls and answers from canned handlers. A method without a
// handler answers with a zero reply.
type fakeRPC struct {
	mu       sync.Mutex
	calls    []rpcCall
	handlers map[string]func(args, reply any) error
}

func newFakeRPC() *fakeRPC { return &fakeRPC{handlers: map[string]func(args, reply any) error{}} }

func (f *fakeRPC) RPC(method string, args, reply any) error {
	f.mu.Lock()
	f.calls = append(f.calls, rpcCall{method, args})
	h := f.handlers[method]
	f.mu.Unlock()
	if h == nil {
		return nil
	}
	return h(args, reply)
}

// reply makes method answer with a copy of v (which must be the reply type).
func (f *fakeRPC) reply(method string, v any) {
	f.handlers[method] = func(_, reply any) error {
		reflect.ValueOf(reply).Elem().Set(reflect.ValueOf(v))
		return nil
	}
}

func (f *fakeRPC) fail(method string, err error) {
	f.handlers[method] = func(_, _ any) error { return err }
}

// last returns the args of the last call to method.
func (f *fakeRPC) last(t *testing.T, method string) any {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.calls) - 1; i >= 0; i-- {
		if f.calls[i].Method == method {
			return f.calls[i].Args
		}
	}
	t.Fatalf("no call to %s; calls: %v", method, f.calls)
	return nil
}

// fakeFS serves one file "alloc/logs/web.stdout.0" and canned frames.
type fakeFS struct {
	content string
	frames  []*api.StreamFrame
	follow  bool // block after frames until ctx ends
	err     error
}

func (f *fakeFS) FSList(allocID, path string) ([]*api.AllocFileInfo, error) {
	if f.err != nil {
		return nil, f.err
	}
	if path == "/empty" {
		return nil, nil
	}
	return []*api.AllocFileInfo{{Name: "alloc", IsDir: true, FileMode: "drwxr-xr-x"}, {Name: "web", IsDir: true}}, nil
}

func (f *fakeFS) FSStat(allocID, path string) (*api.AllocFileInfo, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &api.AllocFileInfo{Name: path, Size: int64(len(f.content)), ModTime: time.Unix(1700000000, 0).UTC()}, nil
}

func (f *fakeFS) FSReadAt(allocID, path string, offset, limit int64) (io.ReadCloser, error) {
	if f.err != nil {
		return nil, f.err
	}
	s := f.content[offset:]
	if limit > 0 && limit < int64(len(s)) {
		s = s[:limit]
	}
	return io.NopCloser(strings.NewReader(s)), nil
}

func (f *fakeFS) send(ctx context.Context, out chan<- *api.StreamFrame) error {
	if f.err != nil {
		return f.err
	}
	for _, fr := range f.frames {
		select {
		case out <- fr:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.follow {
		<-ctx.Done()
	}
	return nil
}

func (f *fakeFS) FSStream(ctx context.Context, allocID, path, origin string, offset int64, follow bool, out chan<- *api.StreamFrame) error {
	return f.send(ctx, out)
}

func (f *fakeFS) FSLogs(ctx context.Context, allocID, task, logType, origin string, offset int64, follow bool, out chan<- *api.StreamFrame) error {
	if task != "web" {
		return structs.NewErrCoded(404, "unknown task name %q", task)
	}
	return f.send(ctx, out)
}

type fakeAgent struct {
	serverOK bool
}

func (a *fakeAgent) Self() map[string]any {
	return map[string]any{
		"config": map[string]any{"Region": "global", "Datacenter": "dc1", "NodeName": "n1"},
		"member": map[string]any{"Name": "n1.global", "Addr": "127.0.0.1", "Port": 4648, "Tags": map[string]string{"region": "global", "dc": "dc1"}, "Status": "alive"},
		"stats":  map[string]map[string]string{"nomad": {"leader": "true"}},
	}
}

func (a *fakeAgent) Members() (*structs.ServerMembersResponse, error) {
	return &structs.ServerMembersResponse{ServerName: "n1", ServerRegion: "global", ServerDC: "dc1"}, nil
}
func (a *fakeAgent) Region() string     { return "global" }
func (a *fakeAgent) Datacenter() string { return "dc1" }
func (a *fakeAgent) NodeName() string   { return "n1" }
func (a *fakeAgent) IsServer() bool     { return true }
func (a *fakeAgent) IsClient() bool     { return true }
func (a *fakeAgent) ServerHealth() (bool, string) {
	return a.serverOK, map[bool]string{true: "ok", false: "No cluster leader"}[a.serverOK]
}
func (a *fakeAgent) ClientHealth() (bool, string) { return true, "ok" }

// recordingAuth records every authorization and can deny tokens.
type recordingAuth struct {
	mu    sync.Mutex
	seen  []string
	deny  string
	token []string
}

func (a *recordingAuth) Authorize(r *http.Request, token string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen = append(a.seen, r.Method+" "+r.URL.Path)
	a.token = append(a.token, token)
	if a.deny != "" && token == a.deny {
		return structs.ErrPermissionDenied
	}
	return nil
}

type testEnv struct {
	rpc    *fakeRPC
	fs     *fakeFS
	auth   *recordingAuth
	srv    *httptest.Server
	client *api.Client
}

func newEnv(t *testing.T, mod func(*Config)) *testEnv {
	t.Helper()
	env := &testEnv{rpc: newFakeRPC(), fs: &fakeFS{content: "hello world\n"}, auth: &recordingAuth{}}
	cfg := Config{RPC: env.rpc, FS: env.fs, Agent: &fakeAgent{serverOK: true}, Auth: env.auth}
	if mod != nil {
		mod(&cfg)
	}
	env.srv = httptest.NewServer(NewHandler(cfg))
	t.Cleanup(env.srv.Close)
	c, err := api.NewClient(&api.Config{Address: env.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	env.client = c
	return env
}

// raw performs a request and returns status, headers and body.
func (e *testEnv) raw(t *testing.T, method, path, body string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// wantStatus asserts an api client error carries code and message.
func wantStatus(t *testing.T, err error, code int, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want %d %q, got no error", code, msg)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("%d", code)) || !strings.Contains(err.Error(), msg) {
		t.Fatalf("want %d %q, got %v", code, msg, err)
	}
}

func meta(index uint64) structs.QueryMeta {
	return structs.QueryMeta{Index: index, LastContact: 25 * time.Millisecond, KnownLeader: true}
}
