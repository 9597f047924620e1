package docker

import (
	"testing"

	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
)

// A container without reserved cores is created on the node's shared
// cpuset and moved, while it runs, when the shared set changes (a task
// reserving a core started or stopped on the node). 2 CPUs: 0-1, then 0.
func TestEngineSharedCpusetUpdate(t *testing.T) {
	dockertest.SkipUnlessCPUs(t, 2)
	d, cli, img := engineDriver(t)
	cfg := engineTask(t, "shared", map[string]any{"image": img, "command": "/bin/sleep", "args": []any{"300"}}, 32)
	cfg.SharedCpuset = "0-1"
	if _, err := d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	h, err := d.get(cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	dockertest.SharedCpusetUpdate(t, d, cli, cfg.ID, h.state.ContainerID, true)
}
