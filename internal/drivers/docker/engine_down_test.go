package docker

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
)

// engineGate is a unix socket in front of the machine's engine that a test
// can close and open again: to the driver behind it, the engine went down
// and came back, while the containers keep their real life.
type engineGate struct {
	t      *testing.T
	sock   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

func newEngineGate(t *testing.T, cli *client.Client) *engineGate {
	t.Helper()
	host := cli.DaemonHost()
	if !strings.HasPrefix(host, "unix://") {
		t.Skipf("the engine is not on a unix socket (%s)", host)
	}
	dir, err := os.MkdirTemp("", "dg") // short: a socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	g := &engineGate{t: t, sock: filepath.Join(dir, "d.sock"), target: strings.TrimPrefix(host, "unix://"), conns: map[net.Conn]bool{}}
	t.Cleanup(func() { g.down(); os.RemoveAll(dir) })
	g.up()
	return g
}

// up listens again (after down) and forwards each connection.
func (g *engineGate) up() {
	ln, err := net.Listen("unix", g.sock)
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

func (g *engineGate) forward(c net.Conn) {
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

// down stops listening (the socket file goes) and cuts every connection,
// as an engine that stopped.
func (g *engineGate) down() {
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

// A task whose container exited while the engine was down (destroy cannot
// remove it) is forgotten all the same: the next start of the task works
// once the engine is back (before, every start failed "already started"
// for the life of the client, so a docker task never came back after a
// daemon restart), and the leftover container is removed when the engine
// answers a fingerprint.
func TestEngineDestroyWhileEngineDownDoesNotWedgeTheTask(t *testing.T) {
	cli := dockertest.Client(t)
	img := dockertest.BuildBusybox(t, cli)
	gate := newEngineGate(t, cli)
	pc := DefaultPluginConfig()
	pc.GCImage = false
	pc.Endpoint = "unix://" + gate.sock
	d := New(Config{Plugin: pc})

	cfg := engineTask(t, "t", map[string]any{"image": img, "command": "/bin/sleep", "args": []any{"600"}}, 32)
	th, err := d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	var ds driverState
	if err := json.Unmarshal(th.DriverState, &ds); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cli.ContainerRemove(context.Background(), ds.ContainerID, container.RemoveOptions{Force: true})
	})

	// The container dies (as the engine's own shutdown kills it), then the
	// engine is unreachable when the client destroys the exited task.
	if err := cli.ContainerKill(context.Background(), ds.ContainerID, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	if r := waitExit(t, d, cfg.ID, 30*time.Second); r.ExitCode != 137 {
		t.Fatalf("exit %+v, want 137", r)
	}
	gate.down()
	if err := d.DestroyTask(cfg.ID, true); err != nil {
		t.Fatalf("destroy with the engine down: %v", err)
	}
	if _, err := cli.ContainerInspect(context.Background(), ds.ContainerID); err != nil {
		t.Fatalf("the exited container should still exist while the engine was unreachable: %v", err)
	}

	gate.up()
	if fp := d.Fingerprint(); fp.Health != drivers.HealthHealthy {
		t.Fatalf("fingerprint with the engine back: %+v", fp)
	}
	if _, err := cli.ContainerInspect(context.Background(), ds.ContainerID); !errdefs.IsNotFound(err) {
		t.Fatalf("the leftover container was not removed once the engine answered: %v", err)
	}

	th2, err := d.StartTask(cfg)
	if err != nil {
		t.Fatalf("the task cannot start again after a destroy with the engine down: %v", err)
	}
	var ds2 driverState
	if err := json.Unmarshal(th2.DriverState, &ds2); err != nil {
		t.Fatal(err)
	}
	if ds2.ContainerID == ds.ContainerID {
		t.Fatal("the old container was reused")
	}
}
