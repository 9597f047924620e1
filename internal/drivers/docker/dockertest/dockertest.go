// Package dockertest is the test kit for code that needs a real Docker
// engine: it connects (skipping the test when no engine answers, failing
// it when CI is set, so a missing engine never hides a broken driver in
// CI) and builds a tiny busybox image without any registry.
//
// It is for tests only and must never be imported by the product.
package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// BusyboxImage is the reference of the image BuildBusybox makes.
const BusyboxImage = "drover-busybox:test"

// busyboxPath is where Debian's busybox-static puts its static binary.
const busyboxPath = "/bin/busybox"

// applets get a symlink in /bin so tasks can call them by name.
var applets = []string{"sh", "sleep", "echo", "cat", "httpd", "tail", "head", "dd", "ls", "env", "true", "false", "kill", "trap", "wget", "id", "hostname", "mkdir", "yes"}

// Client returns a client for the local engine, or ends the test: skipped
// on a developer machine without docker, failed when CI is set.
func Client(t testing.TB) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = cli.Ping(ctx)
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but no docker engine answers: %v", err)
		}
		t.Skipf("no docker engine reachable (%v); start dockerd to run this test", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// BuildBusybox imports BusyboxImage (FROM scratch: /bin/busybox from
// busybox-static and symlinks for its applets) unless it exists, and
// returns its reference. A missing busybox-static ends the test as Client
// does.
func BuildBusybox(t testing.TB, cli *client.Client) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, BusyboxImage); err == nil {
		return BusyboxImage
	}
	bin, err := os.ReadFile(busyboxPath)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set but %s is missing (apt-get install busybox-static): %v", busyboxPath, err)
		}
		t.Skipf("%s missing (apt-get install busybox-static): %v", busyboxPath, err)
	}
	tarball := Tarball(t, bin)
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: bytes.NewReader(tarball), SourceName: "-"}, BusyboxImage,
		image.ImportOptions{Changes: []string{`CMD ["/bin/sh"]`, "ENV PATH=/bin"}})
	if err != nil {
		t.Fatalf("import busybox image: %v", err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(rc)
	if _, err := cli.ImageInspect(ctx, BusyboxImage); err != nil {
		t.Fatalf("busybox image missing after import: %v\n%s", err, buf.String())
	}
	return BusyboxImage
}

// Tarball is a root filesystem with bin (the given busybox binary and its
// applet symlinks) and an empty tmp.
func Tarball(t testing.TB, busybox []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tw.WriteHeader(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755}))
	must(tw.WriteHeader(&tar.Header{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777}))
	must(tw.WriteHeader(&tar.Header{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(busybox))}))
	_, err := tw.Write(busybox)
	must(err)
	for _, a := range applets {
		must(tw.WriteHeader(&tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777}))
	}
	must(tw.Close())
	return buf.Bytes()
}
