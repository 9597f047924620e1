package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
)

// gatedDriverSetup is the engine, the busybox image and a gate in front of
// the engine, with a plugin config whose endpoint is the gate.
func gatedDriverSetup(t *testing.T) (*client.Client, string, *dockertest.Gate, PluginConfig) {
	t.Helper()
	cli := dockertest.Client(t)
	img := dockertest.BuildBusybox(t, cli)
	gate := dockertest.NewGate(t, cli)
	pc := DefaultPluginConfig()
	pc.GCImage = false
	pc.Endpoint = gate.Endpoint()
	return cli, img, gate, pc
}

// startSleeper starts a long-running task on d and returns its handle and
// container ID; the container is removed when the test ends.
func startSleeper(t *testing.T, d *Driver, cli *client.Client, img string) (*drivers.TaskConfig, *drivers.TaskHandle, string) {
	t.Helper()
	cfg := engineTask(t, "t", map[string]any{"image": img, "command": "/bin/sleep", "args": []any{"600"}}, 32)
	th, err := d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ds driverState
	if err := json.Unmarshal(th.DriverState, &ds); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = d.DestroyTask(cfg.ID, true)
		_ = cli.ContainerRemove(context.Background(), ds.ContainerID, container.RemoveOptions{Force: true})
	})
	return cfg, th, ds.ContainerID
}

func containerRunning(t *testing.T, cli *client.Client, id string) bool {
	t.Helper()
	info, err := cli.ContainerInspect(context.Background(), id)
	if errdefs.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return info.State != nil && info.State.Running
}

func containerGone(t *testing.T, cli *client.Client, id string) bool {
	t.Helper()
	_, err := cli.ContainerInspect(context.Background(), id)
	if err != nil && !errdefs.IsNotFound(err) {
		t.Fatal(err)
	}
	return errdefs.IsNotFound(err)
}

func taskContainers(t *testing.T, cli *client.Client, taskID string) []string {
	t.Helper()
	cs, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", labelTaskID+"="+taskID))})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

func healthyFingerprint(t *testing.T, d *Driver) {
	t.Helper()
	if fp := d.Fingerprint(); fp.Health != drivers.HealthHealthy {
		t.Fatalf("fingerprint with the engine answering: %+v", fp)
	}
}

// A recovery that fails because the engine is down (an agent restarted
// while dockerd was restarting) queues the task's container: the task
// runner forgets the handle, so the container (still running with
// live-restore, holding its ports) would otherwise never be removed.
func TestEngineRecoverWhileEngineDownRemovesTheContainer(t *testing.T) {
	cli, img, gate, pc := gatedDriverSetup(t)
	d1 := New(Config{Plugin: pc})
	_, th, id := startSleeper(t, d1, cli, img)

	gate.Down()
	d2 := New(Config{Plugin: pc}) // the restarted agent's driver
	if err := d2.RecoverTask(th); err == nil {
		t.Fatal("recovery with the engine down succeeded")
	}
	if !containerRunning(t, cli, id) {
		t.Fatal("the container should still run while the engine is unreachable")
	}
	gate.Up()
	healthyFingerprint(t, d2)
	if !containerGone(t, cli, id) {
		t.Fatal("the container of the task whose recovery failed was not removed once the engine answered")
	}
}

// A handle stored before its start returned has no container ID: a failed
// recovery queues the task's containers by their task label.
func TestEngineRecoverWithoutDriverStateWhileEngineDown(t *testing.T) {
	cli, img, gate, pc := gatedDriverSetup(t)
	d1 := New(Config{Plugin: pc})
	cfg, _, id := startSleeper(t, d1, cli, img)
	starting := &drivers.TaskHandle{Version: handleVersion, Config: cfg, State: drivers.TaskStateStarting}

	gate.Down()
	d2 := New(Config{Plugin: pc})
	if err := d2.RecoverTask(starting); err == nil {
		t.Fatal("recovery with the engine down succeeded")
	}
	gate.Up()
	healthyFingerprint(t, d2)
	if !containerGone(t, cli, id) {
		t.Fatal("the container of the task whose recovery failed was not removed once the engine answered")
	}
}

// The task runner starts a task anew after its recovery failed: the
// containers queued by the task's label are the earlier ones only, never
// the new one.
func TestEngineStartAfterFailedRecoverKeepsTheNewContainer(t *testing.T) {
	cli, img, gate, pc := gatedDriverSetup(t)
	d1 := New(Config{Plugin: pc})
	cfg, _, old := startSleeper(t, d1, cli, img)
	starting := &drivers.TaskHandle{Version: handleVersion, Config: cfg, State: drivers.TaskStateStarting}

	gate.Down()
	d2 := New(Config{Plugin: pc})
	if err := d2.RecoverTask(starting); err == nil {
		t.Fatal("recovery with the engine down succeeded")
	}
	gate.Up()
	th, err := d2.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d2.DestroyTask(cfg.ID, true) })
	var ds driverState
	if err := json.Unmarshal(th.DriverState, &ds); err != nil {
		t.Fatal(err)
	}
	healthyFingerprint(t, d2)
	if !containerGone(t, cli, old) {
		t.Fatal("the earlier container is still there")
	}
	if !containerRunning(t, cli, ds.ContainerID) {
		t.Fatal("the sweep of the leftover removed the task's new container")
	}
}

// A leftover recorded before an agent restart is removed after it: the
// driver keeps them in a file in its state dir.
func TestEngineLeftoverOutlivesAgentRestart(t *testing.T) {
	cli, img, gate, pc := gatedDriverSetup(t)
	stateDir := t.TempDir()
	d1 := New(Config{Plugin: pc, StateDir: stateDir})
	cfg, _, id := startSleeper(t, d1, cli, img)

	if err := cli.ContainerKill(context.Background(), id, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	waitExit(t, d1, cfg.ID, 30*time.Second)
	gate.Down()
	if err := d1.DestroyTask(cfg.ID, true); err != nil {
		t.Fatalf("destroy with the engine down: %v", err)
	}

	d2 := New(Config{Plugin: pc, StateDir: stateDir}) // the agent restarted
	gate.Up()
	healthyFingerprint(t, d2)
	if !containerGone(t, cli, id) {
		t.Fatal("a leftover recorded before the agent restarted was not removed after it")
	}
	if ents, _ := os.ReadDir(stateDir); len(ents) != 0 {
		t.Fatalf("the state dir keeps %v after every leftover was removed", ents)
	}
}

// With gc.image, the image of a task destroyed while the engine was down
// is removed once its leftover container is: released at the destroy, its
// removal failed (the engine was down, and then the container used it)
// and was never tried again.
func TestEngineLeftoverReleasesItsImageWhenRemoved(t *testing.T) {
	cli, img, gate, pc := gatedDriverSetup(t)
	// A tag of the test's own: removing it only untags the shared image.
	tag := fmt.Sprintf("drover-busybox:left-%d", time.Now().UnixNano())
	if err := cli.ImageTag(context.Background(), img, tag); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = cli.ImageRemove(context.Background(), tag, image.RemoveOptions{}) })
	pc.GCImage = true
	pc.GCImageDelay = 10 * time.Millisecond
	d := New(Config{Plugin: pc})
	cfg, _, id := startSleeper(t, d, cli, tag)

	if err := cli.ContainerKill(context.Background(), id, "SIGKILL"); err != nil {
		t.Fatal(err)
	}
	waitExit(t, d, cfg.ID, 30*time.Second)
	gate.Down()
	if err := d.DestroyTask(cfg.ID, true); err != nil {
		t.Fatalf("destroy with the engine down: %v", err)
	}
	// Any removal of the image scheduled by the destroy has run (and
	// failed) before the engine comes back.
	deadline := time.Now().Add(10 * time.Second)
	for {
		d.images.mu.Lock()
		pending := d.images.timers[tag] != nil
		d.images.mu.Unlock()
		if !pending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the image removal never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.images.lock(tag)()

	gate.Up()
	healthyFingerprint(t, d)
	if !containerGone(t, cli, id) {
		t.Fatal("the leftover container was not removed")
	}
	deadline = time.Now().Add(15 * time.Second)
	for {
		_, err := cli.ImageInspect(context.Background(), tag)
		if errdefs.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the image of the removed leftover is still there with gc.image: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stallingEngine is an HTTP proxy in front of the machine's engine that
// answers until stall says so of a response, then accepts every request
// and never answers it (a hung engine) until released.
type stallingEngine struct {
	sock    string
	mu      sync.Mutex
	stalled bool
	release chan struct{}
}

// What stall says of a response from the engine.
const (
	answer        = iota
	stallAfter    // answer this one, stall from the next
	stallIncluded // the engine did it, but its answer never comes
)

func newStallingEngine(t *testing.T, cli *client.Client, stall func(*http.Response) int) *stallingEngine {
	t.Helper()
	host := cli.DaemonHost()
	if !strings.HasPrefix(host, "unix://") {
		t.Skipf("the engine is not on a unix socket (%s)", host)
	}
	target := strings.TrimPrefix(host, "unix://")
	dir, err := os.MkdirTemp("", "dg")
	if err != nil {
		t.Fatal(err)
	}
	s := &stallingEngine{sock: filepath.Join(dir, "d.sock"), release: make(chan struct{})}
	proxy := &httputil.ReverseProxy{
		Director: func(r *http.Request) { r.URL.Scheme, r.URL.Host = "http", "engine" },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", target)
		}},
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			how := stall(resp)
			if how == answer {
				return nil
			}
			s.mu.Lock()
			s.stalled = true
			release := s.release
			s.mu.Unlock()
			if how == stallIncluded {
				select {
				case <-release:
				case <-resp.Request.Context().Done():
					return resp.Request.Context().Err()
				}
			}
			return nil
		},
	}
	ln, err := net.Listen("unix", s.sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		stalled, release := s.stalled, s.release
		s.mu.Unlock()
		if stalled {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { s.unstall(); srv.Close(); os.RemoveAll(dir) })
	return s
}

// unstall answers again (the held requests too).
func (s *stallingEngine) unstall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stalled {
		s.stalled = false
		close(s.release)
		s.release = make(chan struct{})
	}
}

// An engine that creates the container and then hangs fails the start
// within the start's bound plus the clean-up's (before, the removal of the
// created container had no deadline and the start hung for good), and the
// container is removed once the engine answers again: so is one whose
// create the engine never answered.
func TestEngineStartReturnsWhenEngineHangsAfterCreate(t *testing.T) {
	cli := dockertest.Client(t)
	img := dockertest.BuildBusybox(t, cli)
	for _, tc := range []struct {
		name string
		how  int
	}{{"start unanswered", stallAfter}, {"create unanswered", stallIncluded}} {
		t.Run(tc.name, func(t *testing.T) {
			startWithEngineHungAtCreate(t, cli, img, tc.how)
		})
	}
}

func startWithEngineHungAtCreate(t *testing.T, cli *client.Client, img string, how int) {
	eng := newStallingEngine(t, cli, func(resp *http.Response) int {
		if strings.HasSuffix(resp.Request.URL.Path, "/containers/create") && resp.StatusCode == http.StatusCreated {
			return how
		}
		return answer
	})
	pc := DefaultPluginConfig()
	pc.GCImage = false
	pc.Endpoint = "unix://" + eng.sock
	d := New(Config{Plugin: pc})
	d.startTimeout, d.callTimeout = 2*time.Second, time.Second

	cfg := engineTask(t, "t", map[string]any{"image": img, "command": "/bin/sleep", "args": []any{"600"}}, 32)
	t.Cleanup(func() {
		for _, id := range taskContainers(t, cli, cfg.ID) {
			_ = cli.ContainerRemove(context.Background(), id, container.RemoveOptions{Force: true})
		}
	})
	errc := make(chan error, 1)
	began := time.Now()
	go func() {
		_, err := d.StartTask(cfg)
		errc <- err
	}()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("the start succeeded with the engine hung")
		}
		t.Logf("start failed after %s: %v", time.Since(began).Round(time.Millisecond), err)
	case <-time.After(20 * time.Second):
		t.Fatal("the start hung with the engine hung after the create (bounds: start 2 s, clean-up 1 s)")
	}
	if len(taskContainers(t, cli, cfg.ID)) == 0 {
		t.Fatal("no container was created: the engine stalled too early for the test to mean anything")
	}

	eng.unstall()
	healthyFingerprint(t, d)
	if ids := taskContainers(t, cli, cfg.ID); len(ids) != 0 {
		t.Fatalf("the container of the failed start was not removed once the engine answered: %v", ids)
	}
}
