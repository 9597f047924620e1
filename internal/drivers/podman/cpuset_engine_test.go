package podman

import (
	"testing"

	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
)

// A podman container without reserved cores starts on the node's shared
// cpuset and is moved while it runs when the shared set changes, through
// the service's Docker-compatible container update. 2 CPUs: 0-1, then 0.
func TestPodmanSharedCpusetUpdate(t *testing.T) {
	dockertest.SkipUnlessCPUs(t, 2)
	d, cli, img := engineDriver(t)
	cfg := engineTask(t, "shared", map[string]any{"image": img, "command": "/bin/sleep", "args": []any{"300"}})
	cfg.SharedCpuset = "0-1"
	h, err := d.StartTask(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	dockertest.SharedCpusetUpdate(t, d, cli, cfg.ID, containerID(t, h), false)
}
