package client

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/structs"
)

// The previous node serves its allocation's alloc/data and local/ only to
// the holder of the migrate token made with its secret; what it sends
// unpacks to the same files on the new node.
func TestClient_SnapshotAllocNeedsMigrateTokenAndRoundTrips(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	a := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	dir := filepath.Join(tc.cfg.AllocDir, a.ID)
	mustWrite(t, filepath.Join(dir, "alloc", "data", "sub", "x.txt"), "shared")
	mustWrite(t, filepath.Join(dir, "t", "local", "y.txt"), "local")
	mustWrite(t, filepath.Join(dir, "t", "secrets", "token"), "secret")
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "alloc", "data", "link")); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []string{"", "bogus", structs.MigrateToken(a.ID, "another node's secret")} {
		var buf bytes.Buffer
		err := tc.SnapshotAlloc(a.ID, bad, &buf)
		if coded(err) != http.StatusForbidden || buf.Len() != 0 {
			t.Fatalf("token %q: %v (%d bytes), want 403 and nothing sent", bad, err, buf.Len())
		}
	}
	var buf bytes.Buffer
	if err := tc.SnapshotAlloc(a.ID, structs.MigrateToken(a.ID, tc.secretID()), &buf); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "staging")
	if err := untarInto(&buf, out, []string{"t"}); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]string{"alloc/data/sub/x.txt": "shared", "t/local/y.txt": "local"} {
		if b, err := os.ReadFile(filepath.Join(out, rel)); err != nil || string(b) != want {
			t.Fatalf("%s: %q %v", rel, b, err)
		}
	}
	for _, rel := range []string{"t/secrets/token", "alloc/data/link"} {
		if _, err := os.Lstat(filepath.Join(out, rel)); err == nil {
			t.Fatalf("%s was migrated: only alloc/data and local/ files and directories may be", rel)
		}
	}
}

// An archive whose entries would land outside the migrating directories
// (.., absolute paths, secrets/, links, devices) is refused.
func TestUntarRefusesEscapes(t *testing.T) {
	for _, c := range []struct {
		name string
		hdr  tar.Header
	}{
		{"dotdot", tar.Header{Name: "alloc/data/../../../etc/x", Typeflag: tar.TypeReg, Mode: 0o644}},
		{"absolute", tar.Header{Name: "/etc/x", Typeflag: tar.TypeReg, Mode: 0o644}},
		{"secrets", tar.Header{Name: "t/secrets/token", Typeflag: tar.TypeReg, Mode: 0o600}},
		{"symlink", tar.Header{Name: "alloc/data/l", Typeflag: tar.TypeSymlink, Linkname: "/etc"}},
		{"hardlink", tar.Header{Name: "alloc/data/h", Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}},
		{"device", tar.Header{Name: "alloc/data/d", Typeflag: tar.TypeChar}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			gz := gzip.NewWriter(&buf)
			tw := tar.NewWriter(gz)
			if err := tw.WriteHeader(&c.hdr); err != nil {
				t.Fatal(err)
			}
			tw.Close()
			gz.Close()
			root := t.TempDir()
			err := untarInto(&buf, filepath.Join(root, "staging"), []string{"t"})
			if err == nil || !strings.Contains(err.Error(), "archive entry") {
				t.Fatalf("untar: %v, want a refusal naming the entry", err)
			}
			if _, err := os.Stat(filepath.Join(root, "etc")); err == nil {
				t.Fatal("an entry was written outside the staging directory")
			}
		})
	}
}
