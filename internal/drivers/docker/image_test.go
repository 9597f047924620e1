package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
)

// importTag makes a fresh busybox image under a unique tag.
func importTag(t *testing.T, cli *client.Client, what string) string {
	t.Helper()
	bin, err := os.ReadFile("/bin/busybox")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but /bin/busybox is missing: %v", err)
		}
		t.Skipf("busybox-static missing: %v", err)
	}
	ref := fmt.Sprintf("drover-busybox:%s-%d", what, time.Now().UnixNano())
	rc, err := cli.ImageImport(context.Background(), image.ImportSource{Source: bytes.NewReader(dockertest.Tarball(t, bin)), SourceName: "-"}, ref, image.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, rc)
	rc.Close()
	t.Cleanup(func() { _, _ = cli.ImageRemove(context.Background(), ref, image.RemoveOptions{Force: true}) })
	return ref
}

func imageExists(cli *client.Client, ref string) bool {
	_, err := cli.ImageInspect(context.Background(), ref)
	return !errdefs.IsNotFound(err)
}

// An image is removed gc.image_delay after the last task using it is
// destroyed, not while another task still uses it.
func TestEngineImageGC(t *testing.T) {
	cli := dockertest.Client(t)
	ref := importTag(t, cli, "gc")
	pc := DefaultPluginConfig()
	pc.GCImageDelay = 50 * time.Millisecond
	d := New(Config{Plugin: pc})
	conf := map[string]any{"image": ref, "command": "/bin/sleep", "args": []any{"300"}}
	a, b := engineTask(t, "a", conf, 16), engineTask(t, "b", conf, 16)
	for _, c := range []*drivers.TaskConfig{a, b} {
		if _, err := d.StartTask(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.DestroyTask(a.ID, true); err != nil {
		t.Fatal(err)
	}
	d.images.mu.Lock()
	pending, refs := d.images.timers[ref] != nil, d.images.refs[ref]
	d.images.mu.Unlock()
	if pending || refs != 1 {
		t.Fatalf("image removal scheduled while a task uses it (pending %v, refs %d)", pending, refs)
	}
	if err := d.DestroyTask(b.ID, true); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for imageExists(cli, ref) {
		if time.Now().After(deadline) {
			t.Fatalf("image %s not removed after its last task", ref)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// `load` loads the image from a tarball in the task dir (where an artifact
// would put it) instead of pulling.
func TestEngineLoadImage(t *testing.T) {
	cli := dockertest.Client(t)
	ref := importTag(t, cli, "load")
	cfg := engineTask(t, "loaded", map[string]any{"image": ref, "load": "image.tar", "command": "/bin/echo", "args": []any{"from-loaded"}}, 16)
	rc, err := cli.ImageSave(context.Background(), []string{ref})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(cfg.TaskDir, "local", "image.tar"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, rc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	f.Close()
	if _, err := cli.ImageRemove(context.Background(), ref, image.RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	pc := DefaultPluginConfig()
	pc.GCImage = false
	d := New(Config{Plugin: pc})
	if _, err := d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	if r := waitExit(t, d, cfg.ID, 30*time.Second); !r.Successful() {
		t.Fatalf("loaded image's task failed: %+v", r)
	}
	readFileEventually(t, cfg.StdoutPath, "from-loaded")
}

func TestPullProgressSummary(t *testing.T) {
	p := newPullProgress()
	for _, m := range []jsonMessage{
		{Status: "Pulling from library/redis", ID: "7"},
		{ID: "a", Status: "Pulling fs layer"},
		{ID: "b", Status: "Already exists"},
		{ID: "a", Status: "Downloading", ProgressDetail: struct {
			Current int64 `json:"current"`
			Total   int64 `json:"total"`
		}{Current: 1 << 20, Total: 4 << 20}},
	} {
		p.add(m)
	}
	if got := p.String(); got != "Pulled 1/2 layers (1.0 MiB/4.0 MiB)" {
		t.Fatalf("progress %q", got)
	}
}
