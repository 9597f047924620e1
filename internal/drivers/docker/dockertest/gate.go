package dockertest

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/client"
)

// Gate is a unix socket in front of the machine's engine that a test can
// close and open again: to a driver (or agent) configured with the gate as
// its endpoint, the engine went down and came back, while the containers
// keep their real life (as with the engine's live-restore).
type Gate struct {
	// Sock is the gate's socket path (endpoint "unix://" + Sock).
	Sock string

	t      testing.TB
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

// NewGate opens a gate in front of cli's engine (skipping the test when
// the engine is not on a unix socket); it closes when the test ends.
func NewGate(t testing.TB, cli *client.Client) *Gate {
	t.Helper()
	host := cli.DaemonHost()
	if !strings.HasPrefix(host, "unix://") {
		t.Skipf("the engine is not on a unix socket (%s)", host)
	}
	dir, err := os.MkdirTemp("", "dg") // short: a socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	g := &Gate{t: t, Sock: filepath.Join(dir, "d.sock"), target: strings.TrimPrefix(host, "unix://"), conns: map[net.Conn]bool{}}
	t.Cleanup(func() { g.Down(); os.RemoveAll(dir) })
	g.Up()
	return g
}

// Endpoint is the gate's address as a driver's endpoint.
func (g *Gate) Endpoint() string { return "unix://" + g.Sock }

// Up listens again (after Down) and forwards each connection.
func (g *Gate) Up() {
	ln, err := net.Listen("unix", g.Sock)
	if err != nil {
		g.t.Fatal(err)
	}
	g.mu.Lock()
	g.ln = ln
	g.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go g.forward(c)
		}
	}()
}

func (g *Gate) forward(c net.Conn) {
	up, err := net.Dial("unix", g.target)
	if err != nil {
		c.Close()
		return
	}
	g.mu.Lock()
	g.conns[c], g.conns[up] = true, true
	g.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	g.mu.Lock()
	delete(g.conns, c)
	delete(g.conns, up)
	g.mu.Unlock()
}

// Down stops listening (the socket file goes) and cuts every connection,
// as an engine that stopped.
func (g *Gate) Down() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln != nil {
		g.ln.Close()
		g.ln = nil
	}
	for c := range g.conns {
		c.Close()
	}
}
