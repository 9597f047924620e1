// Package podmantest is the test kit for code that needs a real podman API
// service: it connects to the rootful socket (skipping the test when no
// service answers, failing it when CI is set) and makes the busybox test
// image as a `docker save` tarball, loaded through the service's image
// load API, so no registry is needed.
//
// It is for tests only and must never be imported by the product.
package podmantest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/drover-project/drover/internal/drivers/docker/dockertest"
)

// Socket is the rootful service's socket the tests use.
const Socket = "unix:///run/podman/podman.sock"

// Image is the reference the archive made by Archive names.
const Image = "localhost/drover-busybox:podman"

// Client returns a client for the podman service (through its
// Docker-compatible API), or ends the test: skipped on a developer machine
// without the service, failed when CI is set.
func Client(t testing.TB) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.WithHost(Socket), client.WithAPIVersionNegotiation())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = cli.Ping(ctx)
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but no podman API service answers on %s: %v", Socket, err)
		}
		t.Skipf("no podman API service on %s (%v); start `podman system service --time=0 %s`", Socket, err, Socket)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Archive is a `docker save` tarball of Image: a FROM-scratch root with
// /bin/busybox (from busybox-static) and its applets, CMD /bin/sh.
func Archive(t testing.TB) []byte {
	t.Helper()
	bin, err := os.ReadFile("/bin/busybox")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but /bin/busybox is missing (apt-get install busybox-static): %v", err)
		}
		t.Skipf("/bin/busybox missing (apt-get install busybox-static): %v", err)
	}
	layer := dockertest.Tarball(t, bin)
	sum := sha256.Sum256(layer)
	diffID := "sha256:" + hex.EncodeToString(sum[:])
	cfg, err := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Env": []string{"PATH=/bin"}, "Cmd": []string{"/bin/sh"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID}},
	})
	if err != nil {
		t.Fatal(err)
	}
	csum := sha256.Sum256(cfg)
	cfgName := hex.EncodeToString(csum[:]) + ".json"
	layerName := hex.EncodeToString(sum[:]) + "/layer.tar"
	manifest, _ := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{Image}, "Layers": []string{layerName}}})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{cfgName, cfg}, {layerName, layer}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(f.data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// LoadImage loads Archive into the service (podman's image load API) and
// returns Image.
func LoadImage(t testing.TB, cli *client.Client) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, Image); err == nil {
		return Image
	}
	resp, err := cli.ImageLoad(ctx, bytes.NewReader(Archive(t)), client.ImageLoadWithQuiet(true))
	if err != nil {
		t.Fatalf("load the test image: %v", err)
	}
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	resp.Body.Close()
	if _, err := cli.ImageInspect(ctx, Image); err != nil {
		t.Fatalf("image %s missing after load: %v\n%s", Image, err, out.String())
	}
	return Image
}
