package docker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/errdefs"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
)

// A task whose container exited while the engine was down (destroy cannot
// remove it) is forgotten all the same: the next start of the task works
// once the engine is back (before, every start failed "already started"
// for the life of the client, so a docker task never came back after a
// daemon restart), and the leftover container is removed when the engine
// answers a fingerprint.
func TestEngineDestroyWhileEngineDownDoesNotWedgeTheTask(t *testing.T) {
	cli := dockertest.Client(t)
	img := dockertest.BuildBusybox(t, cli)
	gate := dockertest.NewGate(t, cli)
	pc := DefaultPluginConfig()
	pc.GCImage = false
	pc.Endpoint = gate.Endpoint()
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
	gate.Down()
	if err := d.DestroyTask(cfg.ID, true); err != nil {
		t.Fatalf("destroy with the engine down: %v", err)
	}
	if _, err := cli.ContainerInspect(context.Background(), ds.ContainerID); err != nil {
		t.Fatalf("the exited container should still exist while the engine was unreachable: %v", err)
	}

	gate.Up()
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
