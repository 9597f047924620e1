package reach

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	netrpc "net/rpc"
	"strings"
	"testing"
	"time"

	droverrpc "github.com/drover-project/drover/internal/rpc"
)

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testServer is an RPC port with a hub, as a server has.
type testServer struct {
	hub  *Hub
	addr string
}

func startServer(t *testing.T, secrets map[string]string, peers func() []string) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := droverrpc.NewListener(ln, netrpc.NewServer(), nil, nil)
	hub := NewHub(HubConfig{
		Verify: func(id, secret string) error {
			if s, ok := secrets[id]; !ok || s != secret {
				return errors.New("wrong secret")
			}
			return nil
		},
		Peers: peers, Proto: droverrpc.ProtoNodeTunnel,
	})
	l.Handle(droverrpc.ProtoNodeSession, hub.HandleSession)
	l.Handle(droverrpc.ProtoNodeTunnel, hub.HandleTunnel)
	go l.Serve()
	t.Cleanup(func() { l.Close(); hub.Close() })
	return &testServer{hub: hub, addr: ln.Addr().String()}
}

func startNode(t *testing.T, id, secret string, servers ...string) *NodeSession {
	t.Helper()
	n := StartNode(NodeConfig{
		Servers:  func() []string { return servers },
		Identity: func() (string, string) { return id, secret },
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "node %s answers %s", id, r.URL.Path)
		}),
		Proto:      droverrpc.ProtoNodeSession,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
	})
	t.Cleanup(n.Close)
	return n
}

// get sends one HTTP request over a pipe and returns the body.
func get(t *testing.T, conn net.Conn, path string) string {
	t.Helper()
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: node\r\nConnection: close\r\n\r\n", path)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// A node that proves its secret is reachable through the server holding
// its session; a wrong secret gets no session.
func TestNodeSessionReachable(t *testing.T) {
	srv := startServer(t, map[string]string{"n1": "s1", "n2": "s2"}, nil)
	n1 := startNode(t, "n1", "s1", srv.addr)
	startNode(t, "n2", "wrong", srv.addr)
	// The hub knows the session a moment before the node records whose
	// it is: wait for both.
	waitFor(t, 10*time.Second, "n1's session, on both ends", func() bool { return srv.hub.Has("n1") && n1.Server() == srv.addr })
	conn, err := srv.hub.DialNode(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, conn, "/v1/client/stats"); got != "node n1 answers /v1/client/stats" {
		t.Fatalf("got %q", got)
	}
	time.Sleep(200 * time.Millisecond) // n2 retried a few times by now
	if srv.hub.Has("n2") {
		t.Fatal("a node with a wrong secret holds a session")
	}
	if _, err := srv.hub.DialNode(context.Background(), "n2"); err == nil || !strings.Contains(err.Error(), "no path to node n2") {
		t.Fatalf("n2: %v", err)
	}
}

// A server without the node's session finds it on a peer; a client-only
// agent asks any server, which searches; a server asked by a peer does not
// search further (no loops).
func TestTunnelThroughPeer(t *testing.T) {
	var peersOfA, peersOfB []string
	a := startServer(t, map[string]string{"n1": "s1"}, func() []string { return peersOfA })
	b := startServer(t, map[string]string{"n1": "s1"}, func() []string { return peersOfB })
	peersOfA, peersOfB = []string{b.addr}, []string{a.addr}
	startNode(t, "n1", "s1", b.addr)
	waitFor(t, 10*time.Second, "n1's session on b", func() bool { return b.hub.Has("n1") })

	conn, err := a.hub.DialNode(context.Background(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, conn, "/via-a"); got != "node n1 answers /via-a" {
		t.Fatalf("got %q", got)
	}
	conn, err = DialTunnel(context.Background(), a.addr, droverrpc.ProtoNodeTunnel, "n1", true)
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, conn, "/from-client"); got != "node n1 answers /from-client" {
		t.Fatalf("got %q", got)
	}
	if _, err := DialTunnel(context.Background(), a.addr, droverrpc.ProtoNodeTunnel, "n1", false); err == nil {
		t.Fatal("a server without the session answered a non-searching tunnel")
	}
	if _, err := a.hub.DialNode(context.Background(), "n9"); err == nil || !strings.Contains(err.Error(), "no path to node n9") {
		t.Fatalf("unknown node: %v", err)
	}
}

// When its server goes away the node connects to another one.
func TestNodeSessionFailsOver(t *testing.T) {
	a := startServer(t, map[string]string{"n1": "s1"}, nil)
	b := startServer(t, map[string]string{"n1": "s1"}, nil)
	n := startNode(t, "n1", "s1", a.addr, b.addr)
	waitFor(t, 10*time.Second, "a session", func() bool { return a.hub.Has("n1") || b.hub.Has("n1") })
	first, other := a, b
	if b.hub.Has("n1") {
		first, other = b, a
	}
	first.hub.Close()
	waitFor(t, 10*time.Second, "a session on the other server", func() bool { return other.hub.Has("n1") })
	if n.Server() != other.addr {
		t.Fatalf("node reports %q, want %q", n.Server(), other.addr)
	}
}
