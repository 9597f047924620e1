package getter

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

type entry struct {
	name, body, link string
	typ              byte // tar type; 0 regular
	mode             int64
}

func tarBytes(t *testing.T, entries []entry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.body)), Typeflag: e.typ, Linkname: e.link}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	return b.Bytes()
}

func gz(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func zipBytes(t *testing.T, entries []entry) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		mode := os.FileMode(0o644)
		if e.mode != 0 {
			mode = os.FileMode(e.mode)
		}
		body := e.body
		if e.typ == tar.TypeSymlink {
			mode = os.ModeSymlink | 0o777
			body = e.link
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	zw.Close()
	return b.Bytes()
}

// serve serves files by path and records the last request's headers.
type server struct {
	*httptest.Server
	files   map[string][]byte
	headers http.Header
	queries []string
}

func newServer(t *testing.T, files map[string][]byte) *server {
	s := &server{files: files}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.headers = r.Header.Clone()
		s.queries = append(s.queries, r.URL.RawQuery)
		b, ok := s.files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

func taskDir(t *testing.T) string {
	d := filepath.Join(t.TempDir(), "task")
	if err := os.MkdirAll(filepath.Join(d, "local"), 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var appEntries = []entry{
	{name: "app/", typ: tar.TypeDir},
	{name: "app/run.sh", body: "echo hello\n", mode: 0o755},
}

func TestFetchEveryArchiveType(t *testing.T) {
	tb := tarBytes(t, appEntries)
	bz, err := os.ReadFile("testdata/app.tar.bz2")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, map[string][]byte{
		"/app.tar": tb, "/app.tar.gz": gz(tb), "/app.tgz": gz(tb), "/app.tar.bz2": bz, "/app.tbz2": bz,
		"/app.zip": zipBytes(t, appEntries), "/blob": gz(tb),
	})
	for _, src := range []string{"/app.tar", "/app.tar.gz", "/app.tgz", "/app.tar.bz2", "/app.tbz2", "/app.zip", "/blob?archive=tgz"} {
		t.Run(src, func(t *testing.T) {
			td := taskDir(t)
			dst, err := Fetch(context.Background(), Config{}, Request{Source: s.URL + src, TaskDir: td})
			if err != nil {
				t.Fatal(err)
			}
			if dst != filepath.Join(td, "local") {
				t.Errorf("dest %s", dst)
			}
			p := filepath.Join(td, "local", "app", "run.sh")
			if got := readFile(t, p); got != "echo hello\n" {
				t.Errorf("run.sh = %q", got)
			}
			if st, _ := os.Stat(p); st.Mode().Perm() != 0o755 {
				t.Errorf("run.sh mode %v, want 0755 from the archive", st.Mode())
			}
			ents, _ := os.ReadDir(td)
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".artifact") {
					t.Errorf("temporary %s left in the task dir", e.Name())
				}
			}
		})
	}
}

func TestFetchSingleFileCompressions(t *testing.T) {
	bz, _ := os.ReadFile("testdata/hello.bz2")
	s := newServer(t, map[string][]byte{"/hello.gz": gz([]byte("hello gz\n")), "/hello.bz2": bz})
	for src, want := range map[string]string{"/hello.gz": "hello gz\n", "/hello.bz2": "hello bz2\n"} {
		td := taskDir(t)
		dst, err := Fetch(context.Background(), Config{}, Request{Source: s.URL + src, Mode: "file", Destination: "local/hello", TaskDir: td})
		if err != nil {
			t.Fatal(src, err)
		}
		if got := readFile(t, dst); got != want {
			t.Errorf("%s: %q", src, got)
		}
		// In mode any, a .gz holds one file: a directory cannot take it.
		if _, err := Fetch(context.Background(), Config{}, Request{Source: s.URL + src, TaskDir: td}); err == nil || !strings.Contains(err.Error(), `mode = "file"`) {
			t.Errorf("%s in mode any: %v", src, err)
		}
	}
}

func TestFetchModes(t *testing.T) {
	tb := tarBytes(t, appEntries)
	s := newServer(t, map[string][]byte{"/bin/tool": []byte("#!/bin/sh\n"), "/app.tgz": gz(tb)})
	td := taskDir(t)
	ctx := context.Background()
	// any, plain file: into the destination dir under its own name.
	dst, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/bin/tool", TaskDir: td})
	if err != nil || dst != filepath.Join(td, "local", "tool") || readFile(t, dst) != "#!/bin/sh\n" {
		t.Fatalf("any: %s %v", dst, err)
	}
	// file: the destination is the file; default local/<name>.
	dst, err = Fetch(ctx, Config{}, Request{Source: s.URL + "/bin/tool", Mode: "file", Destination: "local/other/name", TaskDir: td})
	if err != nil || readFile(t, filepath.Join(td, "local", "other", "name")) != "#!/bin/sh\n" {
		t.Fatalf("file: %s %v", dst, err)
	}
	if dst, err = Fetch(ctx, Config{}, Request{Source: s.URL + "/bin/tool", Mode: "file", TaskDir: td}); err != nil || dst != filepath.Join(td, "local", "tool") {
		t.Fatalf("file default: %s %v", dst, err)
	}
	// file cannot unpack an archive; dir needs one.
	if _, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/app.tgz", Mode: "file", TaskDir: td}); err == nil {
		t.Error("mode file unpacked an archive")
	}
	if _, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/bin/tool", Mode: "dir", TaskDir: td}); err == nil {
		t.Error("mode dir took a plain file")
	}
	if _, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/app.tgz", Mode: "dir", Destination: "local/d", TaskDir: td}); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(td, "local", "d", "app", "run.sh")) != "echo hello\n" {
		t.Error("mode dir did not unpack")
	}
	// archive=false keeps the archive as it is.
	if _, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/app.tgz", Options: map[string]string{"archive": "false"}, TaskDir: td}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal([]byte(readFile(t, filepath.Join(td, "local", "app.tgz"))), gz(tb)) {
		t.Error("archive=false: the file is not the archive")
	}
	if _, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/bin/tool?archive=false", Destination: "local/q", TaskDir: td}); err != nil {
		t.Fatal(err)
	}
	if _, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/bin/tool", Mode: "bogus", TaskDir: td}); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("bad mode: %v", err)
	}
}

func TestFetchChecksums(t *testing.T) {
	body := []byte("payload\n")
	sum := func(h interface{ Sum([]byte) []byte }) string { return hex.EncodeToString(h.Sum(nil)) }
	m5, s1, s256, s512 := md5.Sum(body), sha1.Sum(body), sha256.Sum256(body), sha512.Sum512(body)
	good := map[string]string{
		"md5": hex.EncodeToString(m5[:]), "sha1": hex.EncodeToString(s1[:]),
		"sha256": hex.EncodeToString(s256[:]), "sha512": hex.EncodeToString(s512[:]),
	}
	_ = sum
	s := newServer(t, map[string][]byte{
		"/f.bin":        body,
		"/SHA256SUMS":   []byte("0000000000000000000000000000000000000000000000000000000000000000  other.bin\n" + good["sha256"] + " *f.bin\n"),
		"/BSD":          []byte("SHA1 (f.bin) = " + good["sha1"] + "\n"),
		"/NOENTRY":      []byte(good["sha256"] + "  x.bin\n"),
		"/f.bin.sha512": []byte(good["sha512"] + "\n"),
	})
	ctx := context.Background()
	for typ, v := range good {
		for _, c := range []string{typ + ":" + v, v} {
			td := taskDir(t)
			if _, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/f.bin", Options: map[string]string{"checksum": c}, TaskDir: td}); err != nil {
				t.Errorf("%s: %v", c, err)
			}
			// In the query too, where it is not sent to the server.
			if _, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/f.bin?checksum=" + c, TaskDir: td}); err != nil {
				t.Errorf("query %s: %v", c, err)
			}
			if q := s.queries[len(s.queries)-1]; q != "" {
				t.Errorf("checksum sent to the server: %q", q)
			}
			bad := typ + ":" + strings.Repeat("0", len(v))
			_, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/f.bin", Options: map[string]string{"checksum": bad}, TaskDir: taskDir(t)})
			if err == nil || !strings.Contains(err.Error(), "checksums did not match") {
				t.Errorf("bad %s: %v", typ, err)
			}
		}
	}
	for _, f := range []string{"/SHA256SUMS", "/BSD", "/f.bin.sha512"} {
		if _, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/f.bin", Options: map[string]string{"checksum": "file:" + s.URL + f}, TaskDir: taskDir(t)}); err != nil {
			t.Errorf("checksum file %s: %v", f, err)
		}
	}
	if _, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/f.bin", Options: map[string]string{"checksum": "file:" + s.URL + "/NOENTRY"}, TaskDir: taskDir(t)}); err == nil || !strings.Contains(err.Error(), "no checksum for") {
		t.Errorf("checksum file without the entry: %v", err)
	}
	for _, c := range []string{"sha256:zz", "crc32:abcd", "sha256:abcd", "abc"} {
		if _, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/f.bin", Options: map[string]string{"checksum": c}, TaskDir: taskDir(t)}); err == nil || !strings.Contains(err.Error(), "checksum") {
			t.Errorf("malformed %q: %v", c, err)
		}
		if err := CheckSource(s.URL+"/f.bin", map[string]string{"checksum": c}); err == nil {
			t.Errorf("CheckSource accepted checksum %q", c)
		}
	}
	// A failed checksum leaves nothing behind.
	td := taskDir(t)
	Fetch(ctx, Config{}, Request{Source: s.URL + "/f.bin", Options: map[string]string{"checksum": "md5:" + strings.Repeat("0", 32)}, TaskDir: td})
	if _, err := os.Stat(filepath.Join(td, "local", "f.bin")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file that failed its checksum is in place: %v", err)
	}
}

func TestFetchRefusesEscapes(t *testing.T) {
	cases := map[string][]entry{
		"dotdot":          {{name: "../evil", body: "x"}},
		"nested dotdot":   {{name: "a/../../evil", body: "x"}},
		"absolute":        {{name: "/tmp/evil", body: "x"}},
		"symlink out":     {{name: "l", typ: tar.TypeSymlink, link: "../../outside"}},
		"symlink abs":     {{name: "l", typ: tar.TypeSymlink, link: "/etc"}},
		"hardlink out":    {{name: "h", typ: tar.TypeLink, link: "../../etc/passwd"}},
		"through symlink": {{name: "d", typ: tar.TypeSymlink, link: "."}, {name: "d/x", typ: tar.TypeDir}, {name: "d/x/l", typ: tar.TypeSymlink, link: "../../out"}},
	}
	for name, ents := range cases {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, map[string][]byte{"/a.tar": tarBytes(t, ents), "/a.zip": zipBytes(t, ents)})
			for _, src := range []string{"/a.tar", "/a.zip"} {
				if src == "/a.zip" && (name == "hardlink out" || name == "through symlink") {
					continue
				}
				td := taskDir(t)
				_, err := Fetch(context.Background(), Config{}, Request{Source: s.URL + src, TaskDir: td})
				if err == nil {
					t.Errorf("%s: unpacked", src)
				}
				if _, err := os.Lstat(filepath.Join(filepath.Dir(td), "evil")); err == nil {
					t.Errorf("%s: wrote outside the destination", src)
				}
			}
		})
	}
	// Symlinks that stay inside are kept.
	s := newServer(t, map[string][]byte{"/ok.tar": tarBytes(t, []entry{{name: "bin/app", body: "x"}, {name: "current", typ: tar.TypeSymlink, link: "bin/app"}})})
	td := taskDir(t)
	if _, err := Fetch(context.Background(), Config{}, Request{Source: s.URL + "/ok.tar", TaskDir: td}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(td, "local", "current")); got != "x" {
		t.Errorf("symlink inside: %q", got)
	}
}

func TestFetchDestination(t *testing.T) {
	s := newServer(t, map[string][]byte{"/f": []byte("f")})
	td := taskDir(t)
	for _, d := range []string{"../../x", "local/../../../x"} {
		if _, err := Fetch(context.Background(), Config{}, Request{Source: s.URL + "/f", Destination: d, TaskDir: td}); err == nil || !strings.Contains(err.Error(), "escapes") {
			t.Errorf("destination %q: %v", d, err)
		}
		if CheckDestination(d) == nil {
			t.Errorf("CheckDestination(%q) passed", d)
		}
	}
	// The shared alloc dir is inside the allocation (as in Nomad).
	if _, err := Fetch(context.Background(), Config{}, Request{Source: s.URL + "/f", Destination: "../alloc/data", TaskDir: td}); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(filepath.Dir(td), "alloc", "data", "f")) != "f" {
		t.Error("not in ../alloc/data")
	}
	// An absolute destination is taken as relative to the task dir.
	if _, err := Fetch(context.Background(), Config{}, Request{Source: s.URL + "/f", Destination: "/opt/x", TaskDir: td}); err != nil || readFile(t, filepath.Join(td, "opt", "x", "f")) != "f" {
		t.Errorf("absolute destination: %v", err)
	}
}

func TestFetchLimits(t *testing.T) {
	big := bytes.Repeat([]byte("a"), 10000)
	many := []entry{}
	for i := range 5 {
		many = append(many, entry{name: fmt.Sprintf("f%d", i), body: "x"})
	}
	s := newServer(t, map[string][]byte{
		"/big": big, "/big.tgz": gz(tarBytes(t, []entry{{name: "big", body: string(big)}})),
		"/many.zip": zipBytes(t, many), "/big.gz": gz(big),
	})
	ctx := context.Background()
	_, err := Fetch(ctx, Config{HTTPMaxSize: 9999}, Request{Source: s.URL + "/big", TaskDir: taskDir(t)})
	if err == nil || !strings.Contains(err.Error(), "http_max_size") {
		t.Errorf("http_max_size: %v", err)
	}
	if _, err := Fetch(ctx, Config{HTTPMaxSize: 10000}, Request{Source: s.URL + "/big", TaskDir: taskDir(t)}); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	_, err = Fetch(ctx, Config{DecompressionSizeLimit: 5000}, Request{Source: s.URL + "/big.tgz", TaskDir: taskDir(t)})
	if err == nil || !strings.Contains(err.Error(), "decompression_size_limit") {
		t.Errorf("decompression_size_limit: %v", err)
	}
	_, err = Fetch(ctx, Config{DecompressionSizeLimit: 5000}, Request{Source: s.URL + "/big.gz", Mode: "file", TaskDir: taskDir(t)})
	if err == nil || !strings.Contains(err.Error(), "decompression_size_limit") {
		t.Errorf("decompression_size_limit, gz: %v", err)
	}
	_, err = Fetch(ctx, Config{DecompressionFileCountLimit: 4}, Request{Source: s.URL + "/many.zip", TaskDir: taskDir(t)})
	if err == nil || !strings.Contains(err.Error(), "decompression_file_count_limit") {
		t.Errorf("decompression_file_count_limit: %v", err)
	}
	if _, err := Fetch(ctx, Config{DecompressionFileCountLimit: 5}, Request{Source: s.URL + "/many.zip", TaskDir: taskDir(t)}); err != nil {
		t.Errorf("at the file limit: %v", err)
	}
}

func TestFetchHeadersAndErrors(t *testing.T) {
	s := newServer(t, map[string][]byte{"/f": []byte("f")})
	ctx := context.Background()
	_, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/f", Headers: map[string]string{"Authorization": "Bearer tok", "X-Env": "prod"},
		Options: map[string]string{"ref": "v1"}, TaskDir: taskDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	if s.headers.Get("Authorization") != "Bearer tok" || s.headers.Get("X-Env") != "prod" {
		t.Errorf("headers not sent: %v", s.headers)
	}
	if q := s.queries[len(s.queries)-1]; q != "ref=v1" {
		t.Errorf("other options are the query: %q", q)
	}
	_, err = Fetch(ctx, Config{}, Request{Source: s.URL + "/missing", TaskDir: taskDir(t)})
	if err == nil || !strings.Contains(err.Error(), "bad response code: 404") {
		t.Errorf("404: %v", err)
	}
}

func TestCheckSource(t *testing.T) {
	unsupported := map[string]string{
		"git::https://example.com/r.git?sshkey=abc": "sshkey",
		"hg::http://example.com/repo":               "hg",
		"s3::https://s3.amazonaws.com/b/k":          "s3",
		"s3://bucket/key":                           "s3",
		"bucket.s3.amazonaws.com/key":               "s3",
		"gcs::https://www.googleapis.com/storage":   "gcs",
		"gs://bucket/key":                           "gs",
		"ssh://git@example.com/repo":                "ssh",
		"https://example.com/app.tar.xz":            "tar.xz",
		"https://example.com/app.txz":               "txz",
		"https://example.com/app.xz":                "xz",
		"https://example.com/app?archive=xz":        "xz",
	}
	for src, name := range unsupported {
		var ue *UnsupportedError
		if err := CheckSource(src, nil); !errors.As(err, &ue) || ue.Name != name {
			t.Errorf("%s: %v", src, err)
		}
	}
	for _, src := range []string{"git::https://github.com/org/repo", "github.com/hashicorp/nomad", "git@github.com:org/repo.git",
		"git::https://example.com/repo.git//sub?ref=v1&depth=1", "https://example.com/app.tgz", "http://example.com/x", "/opt/app.zip", "local/app.tar",
		"file:///opt/app", "https://${NOMAD_META_host}/app", "https://example.com/app.tar.xz?archive=false"} {
		if err := CheckSource(src, nil); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
	if err := CheckSource("https://example.com/x", map[string]string{"archive": "rar"}); err == nil {
		t.Error("archive=rar accepted")
	}
}

func TestFetchLocalFileIsolation(t *testing.T) {
	td := taskDir(t)
	os.WriteFile(filepath.Join(td, "local", "in.txt"), []byte("in"), 0o644)
	outside := filepath.Join(t.TempDir(), "out.txt")
	os.WriteFile(outside, []byte("out"), 0o644)
	ctx := context.Background()
	if _, err := Fetch(ctx, Config{}, Request{Source: "local/in.txt", Destination: "local/copy", TaskDir: td}); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(td, "local", "copy", "in.txt")) != "in" {
		t.Error("relative local source not copied")
	}
	if _, err := Fetch(ctx, Config{}, Request{Source: "file://" + outside, TaskDir: td}); err == nil || !strings.Contains(err.Error(), "outside the allocation directory") {
		t.Errorf("isolated: %v", err)
	}
	if _, err := Fetch(ctx, Config{FilesystemIsolationExtraPaths: []string{"d:r:" + filepath.Dir(outside)}}, Request{Source: outside, TaskDir: td}); err != nil {
		t.Errorf("extra path: %v", err)
	}
	if _, err := Fetch(ctx, Config{DisableFilesystemIsolation: true}, Request{Source: "file://" + outside, Destination: "local/o", TaskDir: td}); err != nil || readFile(t, filepath.Join(td, "local", "o", "out.txt")) != "out" {
		t.Errorf("isolation disabled: %v", err)
	}
}

// An https source is verified unless the artifact sets insecure.
func TestFetchHTTPSInsecure(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("tls")) }))
	defer s.Close()
	ctx := context.Background()
	if _, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/f", TaskDir: taskDir(t)}); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("self-signed certificate accepted: %v", err)
	}
	td := taskDir(t)
	if _, err := Fetch(ctx, Config{}, Request{Source: s.URL + "/f", Insecure: true, TaskDir: td}); err != nil || readFile(t, filepath.Join(td, "local", "f")) != "tls" {
		t.Errorf("insecure: %v", err)
	}
}

// chown gives every fetched file (and the unpacked tree) to the owner.
func TestFetchChown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	s := newServer(t, map[string][]byte{"/app.tgz": gz(tarBytes(t, appEntries))})
	td := taskDir(t)
	if _, err := Fetch(context.Background(), Config{}, Request{Source: s.URL + "/app.tgz", Destination: "local/app", Owner: &Owner{UID: 65534, GID: 65534}, TaskDir: td}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"local/app", "local/app/app", "local/app/app/run.sh"} {
		st, err := os.Stat(filepath.Join(td, p))
		if err != nil {
			t.Fatal(err)
		}
		if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 65534 || sys.Gid != 65534 {
			t.Errorf("%s owned by %d:%d", p, sys.Uid, sys.Gid)
		}
	}
}

// A git source is cloned with the git binary: ref, depth and a //subdir
// are honoured, and a local repository is subject to the filesystem
// isolation as a local file is.
func TestFetchGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "-q")
	os.MkdirAll(filepath.Join(repo, "sub"), 0o755)
	os.WriteFile(filepath.Join(repo, "sub", "conf"), []byte("v1"), 0o644)
	git("add", ".")
	git("commit", "-qm", "one")
	git("tag", "v1")
	os.WriteFile(filepath.Join(repo, "sub", "conf"), []byte("v2"), 0o644)
	git("commit", "-qam", "two")
	ctx := context.Background()
	open := Config{DisableFilesystemIsolation: true}
	for src, want := range map[string]string{
		"git::file://" + repo:                     "v2",
		"git::file://" + repo + "?ref=v1":         "v1",
		"git::file://" + repo + "?ref=v1&depth=1": "v1",
	} {
		td := taskDir(t)
		if _, err := Fetch(ctx, open, Request{Source: src, Destination: "local/repo", TaskDir: td}); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got := readFile(t, filepath.Join(td, "local", "repo", "sub", "conf")); got != want {
			t.Errorf("%s: conf %q, want %q", src, got, want)
		}
	}
	td := taskDir(t)
	if _, err := Fetch(ctx, open, Request{Source: "git::file://" + repo + "//sub?ref=v1", TaskDir: td}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(td, "local", "conf")); got != "v1" {
		t.Errorf("subdir: %q", got)
	}
	if _, err := Fetch(ctx, Config{}, Request{Source: "git::file://" + repo, TaskDir: taskDir(t)}); err == nil || !strings.Contains(err.Error(), "outside the allocation directory") {
		t.Errorf("isolated local repository: %v", err)
	}
	if _, err := Fetch(ctx, open, Request{Source: "git::file://" + repo + "?ref=nope", TaskDir: taskDir(t)}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown ref: %v", err)
	}
	if _, err := Fetch(ctx, open, Request{Source: "git::file://" + repo, Mode: "file", TaskDir: taskDir(t)}); err == nil {
		t.Error("mode file took a repository")
	}
}
