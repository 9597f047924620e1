package docker

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"

	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
)

// testRegistry is a minimal read-only Docker registry (API v2) on loopback
// serving one image: the busybox test root as one gzipped layer. The engine
// pulls from 127.0.0.1 over plain HTTP (loopback registries are insecure by
// default), so a real pull runs without any registry on the network.
func testRegistry(t *testing.T, repo, tag string) string {
	t.Helper()
	bin, err := os.ReadFile("/bin/busybox")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but /bin/busybox is missing: %v", err)
		}
		t.Skipf("busybox-static missing: %v", err)
	}
	layerTar := dockertest.Tarball(t, bin)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(layerTar)
	_ = zw.Close()
	digest := func(b []byte) string { s := sha256.Sum256(b); return "sha256:" + hex.EncodeToString(s[:]) }
	cfg, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Env": []string{"PATH=/bin"}, "Cmd": []string{"/bin/sh"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{digest(layerTar)}},
	})
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
		"config": map[string]any{"mediaType": "application/vnd.docker.container.image.v1+json", "size": len(cfg), "digest": digest(cfg)},
		"layers": []map[string]any{{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": gz.Len(), "digest": digest(gz.Bytes())}},
	})
	blobs := map[string][]byte{digest(cfg): cfg, digest(gz.Bytes()): gz.Bytes()}
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		p := r.URL.Path
		switch {
		case p == "/v2/" || p == "/v2":
			w.WriteHeader(200)
		case p == "/v2/"+repo+"/manifests/"+tag || p == "/v2/"+repo+"/manifests/"+digest(manifest):
			w.Header().Set("Content-Type", "application/vnd.docker.distribution.manifest.v2+json")
			w.Header().Set("Docker-Content-Digest", digest(manifest))
			w.Header().Set("Content-Length", fmt.Sprint(len(manifest)))
			if r.Method != http.MethodHead {
				_, _ = w.Write(manifest)
			}
		case strings.HasPrefix(p, "/v2/"+repo+"/blobs/"):
			b, ok := blobs[strings.TrimPrefix(p, "/v2/"+repo+"/blobs/")]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			if r.Method != http.MethodHead {
				_, _ = w.Write(b)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://") + "/" + repo + ":" + tag
}

// A task whose image is not present records "Downloading image" with the
// image when the pull starts, then the pull's progress, and runs once the
// pull is done.
func TestEnginePullRecordsEvents(t *testing.T) {
	d, cli, _ := engineDriver(t)
	ref := testRegistry(t, "drover/pulled", fmt.Sprint(time.Now().UnixNano()))
	t.Cleanup(func() { _, _ = cli.ImageRemove(context.Background(), ref, image.RemoveOptions{Force: true}) })
	old := pullProgressInterval
	pullProgressInterval = 0 // every message reports
	t.Cleanup(func() { pullProgressInterval = old })

	cfg := engineTask(t, "pulled", map[string]any{"image": ref, "command": "/bin/sh", "args": []any{"-c", "echo pulled-and-ran"}}, 32)
	var mu sync.Mutex
	var events []string
	cfg.EmitEvent = func(msg string, details map[string]string) {
		mu.Lock()
		defer mu.Unlock()
		if details["image"] != ref {
			t.Errorf("event %q without the image in its details: %v", msg, details)
		}
		events = append(events, msg)
	}
	if _, err := d.StartTask(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(cfg.ID, true) })
	if r := waitExit(t, d, cfg.ID, 30*time.Second); !r.Successful() {
		t.Fatalf("pulled task: %+v", r)
	}
	readFileEventually(t, cfg.StdoutPath, "pulled-and-ran")
	mu.Lock()
	defer mu.Unlock()
	if len(events) < 2 || events[0] != "Downloading image" {
		t.Fatalf("events %q: want Downloading image first, then progress", events)
	}
	last := events[len(events)-1]
	if !strings.HasPrefix(last, "Image "+ref+" pull progress: Pulled 1/1 layers") {
		t.Fatalf("last event %q: want the pull's progress with its layer done", last)
	}
}
