package allocdir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func build(t *testing.T) *AllocDir {
	t.Helper()
	d := New(t.TempDir(), "a1b2")
	if err := d.Build([]string{"web", "sidecar"}); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestBuildLayoutAndModes(t *testing.T) {
	d := build(t)
	want := map[string]os.FileMode{
		"alloc":           0o755 | os.ModeDir,
		"alloc/data":      0o777 | os.ModeDir,
		"alloc/logs":      0o777 | os.ModeDir,
		"alloc/tmp":       0o777 | os.ModeDir | os.ModeSticky,
		"web":             0o777 | os.ModeDir,
		"web/local":       0o777 | os.ModeDir,
		"web/secrets":     0o700 | os.ModeDir,
		"web/tmp":         0o777 | os.ModeDir | os.ModeSticky,
		"web/private":     0o700 | os.ModeDir,
		"sidecar/secrets": 0o700 | os.ModeDir,
	}
	for rel, mode := range want {
		fi, err := os.Stat(filepath.Join(d.AllocDir, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if fi.Mode() != mode {
			t.Errorf("%s: mode %v, want %v", rel, fi.Mode(), mode)
		}
	}
	if d.TaskDir("web") != filepath.Join(d.AllocDir, "web") || d.LogDir() != filepath.Join(d.AllocDir, "alloc", "logs") {
		t.Errorf("paths: %s %s", d.TaskDir("web"), d.LogDir())
	}
	if err := d.Build([]string{"web"}); err != nil {
		t.Errorf("rebuild: %v", err)
	}
	if err := d.Build([]string{"../x"}); err == nil {
		t.Error("task name with a slash accepted")
	}
	if err := d.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.AllocDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after destroy: %v", err)
	}
}

func TestResolveRejectsEscapes(t *testing.T) {
	d := build(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"web/local/out-abs":  outside,
		"web/local/out-rel":  "../../../../" + filepath.Base(outside),
		"web/local/etc":      "/etc",
		"web/local/dangling": filepath.Join(outside, "missing"),
		"web/local/in":       "../../alloc/logs",
		"web/local/in-abs":   filepath.Join(d.AllocDir, "alloc", "data"),
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(d.AllocDir, l)); err != nil {
			t.Fatal(err)
		}
	}
	bad := []string{
		"..", "../", "alloc/../..", "web/../../x", "/etc/passwd", "/",
		"web/local/out-abs", "web/local/out-abs/secret", "web/local/out-rel/secret",
		"web/local/etc/passwd", "web/local/dangling", "web/local/dangling/x", "a\x00b",
	}
	for _, p := range bad {
		if got, err := d.Resolve(p); !errors.Is(err, ErrEscape) {
			t.Errorf("Resolve(%q) = %q, %v; want ErrEscape", p, got, err)
		}
	}
	good := map[string]string{
		"":                 "",
		".":                "",
		"alloc/logs":       "alloc/logs",
		"web/local/in":     "alloc/logs",
		"web/local/in-abs": "alloc/data",
		"web/local/new":    "web/local/new", // need not exist
		"web//local/./x":   "web/local/x",
	}
	root, _ := filepath.EvalSymlinks(d.AllocDir)
	for p, want := range good {
		got, err := d.Resolve(p)
		if err != nil || got != filepath.Join(root, want) {
			t.Errorf("Resolve(%q) = %q, %v; want %q", p, got, err, filepath.Join(root, want))
		}
	}
}

func TestListAndStat(t *testing.T) {
	d := build(t)
	if err := os.WriteFile(filepath.Join(d.LogDir(), "web.stdout.0"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.AllocDir, "web/local/index.html"), []byte("<p>"), 0o640); err != nil {
		t.Fatal(err)
	}
	ls, err := d.List("alloc")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range ls {
		names = append(names, f.Name)
		if !f.IsDir || f.FileMode[0] != 'd' {
			t.Errorf("%s: %+v", f.Name, f)
		}
	}
	if len(names) != 3 || names[0] != "data" || names[1] != "logs" || names[2] != "tmp" {
		t.Errorf("list alloc: %v", names)
	}
	st, err := d.Stat("alloc/logs/web.stdout.0")
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "web.stdout.0" || st.IsDir || st.Size != 5 || st.FileMode != "-rw-r--r--" || st.ModTime.IsZero() {
		t.Errorf("stat: %+v", st)
	}
	st, err = d.Stat("web/local/index.html")
	if err != nil || st.FileMode != "-rw-r-----" || st.ContentType != "text/html; charset=utf-8" {
		t.Errorf("stat html: %+v %v", st, err)
	}
	if _, err := d.List("../"); !errors.Is(err, ErrEscape) {
		t.Errorf("list escape: %v", err)
	}
	if _, err := d.Stat("alloc/nope"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat missing: %v", err)
	}
}
