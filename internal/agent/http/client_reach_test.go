package httpapi

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// gatedFS streams one frame, then a second when released, then holds the
// stream open until its caller goes away.
type gatedFS struct {
	fakeFS
	release   chan struct{}
	cancelled chan struct{}
	once      sync.Once
}

func (g *gatedFS) FSLogs(ctx context.Context, allocID, task, logType, origin string, offset int64, follow bool, out chan<- *api.StreamFrame) error {
	out <- &api.StreamFrame{Data: []byte("one\n"), File: "web.stdout.0"}
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	out <- &api.StreamFrame{Data: []byte("two\n"), File: "web.stdout.0"}
	<-ctx.Done()
	g.once.Do(func() { close(g.cancelled) })
	return nil
}

// tcpDialer reaches one node's handler; dialled counts the pipes opened.
type tcpDialer struct {
	nodes   map[string]string // node ID -> address
	mu      sync.Mutex
	dialled int
}

func (d *tcpDialer) DialNode(ctx context.Context, nodeID string) (net.Conn, error) {
	addr, ok := d.nodes[nodeID]
	if !ok {
		return nil, structs.NewErrCoded(503, "no path to node %s", nodeID)
	}
	d.mu.Lock()
	d.dialled++
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", addr)
}

// A server agent (no client) relays a node's log stream as it is written,
// not once it ends, and the node's stream ends when the caller goes away.
func TestRelayStreamsAndCancels(t *testing.T) {
	g := &gatedFS{release: make(chan struct{}), cancelled: make(chan struct{})}
	node := httptest.NewServer(NewHandler(Config{FS: g, Stats: fakeStats{id: "node-b"}, Allocs: allocSet{"a1": true}}))
	defer node.Close()
	dialer := &tcpDialer{nodes: map[string]string{"node-b": node.Listener.Addr().String()}}
	env := newEnv(t, func(c *Config) { c.FS = nil; c.Reach = dialer })
	env.rpc.reply("Alloc.GetAlloc", structs.SingleAllocResponse{Alloc: &structs.Allocation{ID: "a1", NodeID: "node-b"}})

	// A relay that buffered would hold "one" until the stream ends: the
	// client's timeout turns that into a failure.
	hc := &http.Client{Timeout: 20 * time.Second}
	resp, err := hc.Get(env.srv.URL + "/v1/client/fs/logs/a1?task=web&type=stdout&follow=true&plain=true")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	buf := make([]byte, 64)
	read := func(want string) {
		t.Helper()
		got := ""
		for got != want {
			n, err := resp.Body.Read(buf)
			got += string(buf[:n])
			if err != nil || len(got) > len(want) {
				t.Fatalf("read %q (%v), want %q", got, err, want)
			}
		}
	}
	read("one\n") // before the node has written the second frame
	close(g.release)
	read("two\n")
	resp.Body.Close()
	select {
	case <-g.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the node's stream kept running after the caller left")
	}
}

type allocSet map[string]bool

func (s allocSet) HasAlloc(id string) bool { return s[id] }

// AllocChecks: a known allocation has no checks.
func (s allocSet) AllocChecks(id string) (api.AllocCheckStatuses, error) {
	if !s[id] {
		return nil, structs.NewErrCoded(404, "Unknown allocation %q", id)
	}
	return api.AllocCheckStatuses{}, nil
}

// node_id routes are relayed to that node; an unknown node is a 404, a
// node without a path a 503; a relayed request is never relayed again.
func TestRelayByNodeID(t *testing.T) {
	node := httptest.NewServer(NewHandler(Config{Stats: fakeStats{id: "node-b"}}))
	defer node.Close()
	dialer := &tcpDialer{nodes: map[string]string{"node-b": node.Listener.Addr().String()}}
	env := newEnv(t, func(c *Config) { c.Reach = dialer; c.Stats = fakeStats{id: "node-a"} })
	env.rpc.handlers["Node.GetNode"] = func(args, reply any) error {
		id := args.(*structs.NodeSpecificRequest).NodeID
		if id == "node-b" || id == "node-c" {
			reply.(*structs.SingleNodeResponse).Node = &structs.Node{ID: id}
		}
		return nil
	}
	s, err := env.client.Nodes().Stats("node-b", nil)
	if err != nil || s.Uptime != 42 {
		t.Fatalf("relayed stats: %+v %v", s, err)
	}
	if code, _, body := env.raw(t, "GET", "/v1/client/stats?node_id=node-x", ""); code != 404 || !strings.Contains(body, `Unknown node "node-x"`) {
		t.Fatalf("unknown node: %d %q", code, body)
	}
	if code, _, body := env.raw(t, "GET", "/v1/client/stats?node_id=node-c", ""); code != 503 || !strings.Contains(body, "no path to node node-c") {
		t.Fatalf("unreachable node: %d %q", code, body)
	}
	// A request already relayed is answered here (this is not node-x).
	req, _ := http.NewRequest("GET", env.srv.URL+"/v1/client/stats?node_id=node-x", nil)
	req.Header.Set(reachedHeader, "node-x")
	before := dialer.dialled
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "is not this agent's client") || dialer.dialled != before {
		t.Fatalf("relayed twice: %d %q dialled %d", resp.StatusCode, b, dialer.dialled-before)
	}
}

// An allocation whose node is gone from the servers' view is a 404, and
// the RPC's failure is the caller's answer.
func TestRelayUnknownAlloc(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.FS = nil; c.Reach = &tcpDialer{} })
	env.rpc.reply("Alloc.GetAlloc", structs.SingleAllocResponse{})
	if code, _, body := env.raw(t, "GET", "/v1/client/fs/cat/a9?path=x", ""); code != 404 || !strings.Contains(body, `Unknown allocation "a9"`) {
		t.Fatalf("unknown alloc: %d %q", code, body)
	}
	env.rpc.fail("Alloc.GetAlloc", errors.New("no leader"))
	if code, _, _ := env.raw(t, "GET", "/v1/client/fs/cat/a9?path=x", ""); code == 200 {
		t.Fatalf("rpc failure: %d", code)
	}
}

// exec of an allocation the servers do not know is refused as Nomad does,
// after the upgrade with the reason in the close frame (what the api
// client's Exec returns as its error), not with a status.
func TestRelayExecUnknownAlloc(t *testing.T) {
	env := newEnv(t, func(c *Config) { c.FS = nil; c.Reach = &tcpDialer{} })
	env.rpc.reply("Alloc.GetAlloc", structs.SingleAllocResponse{})
	url := "ws" + strings.TrimPrefix(env.srv.URL, "http") + `/v1/client/allocation/a9/exec?task=web&command=%5B%22sh%22%5D`
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var f api.ExecStreamingOutput
	if err := conn.ReadJSON(&f); !websocket.IsCloseError(err, websocket.ClosePolicyViolation) || err.(*websocket.CloseError).Text != `Unknown allocation "a9"` {
		t.Fatalf("want a close with the refusal, got %v", err)
	}
}
