package docker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/drover-project/drover/internal/drivers"
)

// A client stopped between creating a task's container and starting it
// left a container that never ran. Recovering it reported the task exited
// with code 0 at once: the runner counted a restart of a task that never
// ran ("Terminated, Exit Code: 0", then "Restarting"), and a batch task
// completed successfully without running at all. It is not recovered now:
// its container is removed and the task can be started anew.
func TestEngineRecoverNeverStartedContainer(t *testing.T) {
	d1, cli, img := engineDriver(t)
	cfg := engineTask(t, "t", map[string]any{"image": img, "command": "/bin/sleep", "args": []any{"600"}}, 32)
	tc, err := d1.flavor.parseTask(cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := buildCreateSpec(&d1.cfg, d1.flavor, cfg, tc, img)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	created, err := d1.createContainer(ctx, cli, spec) // and the client died
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cli.ContainerRemove(context.Background(), created, container.RemoveOptions{Force: true})
	})

	d2 := New(Config{Plugin: d1.cfg})
	starting := &drivers.TaskHandle{Version: handleVersion, Config: cfg, State: drivers.TaskStateStarting}
	if err := d2.RecoverTask(starting); err == nil {
		r := waitExit(t, d2, cfg.ID, 10*time.Second)
		t.Fatalf("a container that never ran was recovered, and its task reported exited: %+v", r)
	}
	if !containerGone(t, cli, created) {
		t.Fatal("the container that never ran is still there")
	}
	th, err := d2.StartTask(cfg)
	if err != nil {
		t.Fatalf("start after the failed recovery: %v", err)
	}
	t.Cleanup(func() { _ = d2.DestroyTask(cfg.ID, true) })
	var ds driverState
	if err := json.Unmarshal(th.DriverState, &ds); err != nil {
		t.Fatal(err)
	}
	if !containerRunning(t, cli, ds.ContainerID) {
		t.Fatal("the task started anew is not running")
	}
}
