package template

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// fakeBackend serves variables and services from memory; a read with a
// MinIndex blocks until the index passes it.
type fakeBackend struct {
	mu    sync.Mutex
	cond  *sync.Cond
	index uint64
	vars  map[string]map[string]string
	svcs  map[string][]*structs.ServiceRegistration
	deny  map[string]bool
	reads []string // "path token"
}

func newFake() *fakeBackend {
	f := &fakeBackend{index: 10, vars: map[string]map[string]string{}, svcs: map[string][]*structs.ServiceRegistration{}, deny: map[string]bool{}}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func (f *fakeBackend) put(path string, items map[string]string) {
	f.mu.Lock()
	f.index++
	f.vars[path] = items
	f.cond.Broadcast()
	f.mu.Unlock()
}

func (f *fakeBackend) wait(q Query) {
	deadline := time.Now().Add(q.MaxWait)
	for q.MinIndex > 0 && f.index <= q.MinIndex && time.Now().Before(deadline) {
		go func() { time.Sleep(50 * time.Millisecond); f.cond.Broadcast() }()
		f.cond.Wait()
	}
}

func (f *fakeBackend) ReadVar(q Query, path string) (*structs.VariableDecrypted, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, path+" "+q.Token)
	if f.deny[path] {
		return nil, 0, errors.New("Permission denied")
	}
	f.wait(q)
	items, ok := f.vars[path]
	if !ok {
		return nil, f.index, nil
	}
	return &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Namespace: q.Namespace, Path: path, ModifyIndex: f.index}, Items: items}, f.index, nil
}

func (f *fakeBackend) ListVars(q Query, prefix string) ([]*structs.VariableMetadata, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deny["list:"+prefix] {
		return nil, 0, errors.New("rpc error: Permission denied")
	}
	f.wait(q)
	var out []*structs.VariableMetadata
	for p := range f.vars {
		if strings.HasPrefix(p, prefix) {
			out = append(out, &structs.VariableMetadata{Namespace: q.Namespace, Path: p})
		}
	}
	return out, f.index, nil
}

func (f *fakeBackend) Service(q Query, name, choose string) ([]*structs.ServiceRegistration, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wait(q)
	regs := f.svcs[name]
	if choose != "" {
		regs = regs[:1]
	}
	return regs, f.index, nil
}

func (f *fakeBackend) Services(q Query) ([]*structs.ServiceRegistrationListStub, uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wait(q)
	var stubs []*structs.ServiceRegistrationStub
	for n := range f.svcs {
		stubs = append(stubs, &structs.ServiceRegistrationStub{ServiceName: n, Tags: []string{"t"}})
	}
	return []*structs.ServiceRegistrationListStub{{Namespace: "default", Services: stubs}}, f.index, nil
}

func tmpl(dest, data string) *structs.Template {
	return &structs.Template{DestPath: &dest, EmbeddedTmpl: &data}
}

func taskDirs(t *testing.T) (string, string) {
	alloc := t.TempDir()
	task := filepath.Join(alloc, "web")
	if err := os.MkdirAll(filepath.Join(task, "local"), 0o755); err != nil {
		t.Fatal(err)
	}
	return alloc, task
}

func renderOne(t *testing.T, f *fakeBackend, tp *structs.Template) (string, Result, error) {
	t.Helper()
	alloc, task := taskDirs(t)
	m, err := New(Config{Templates: []*structs.Template{tp}, TaskDir: task, AllocDir: alloc, Backend: f,
		Env: map[string]string{"NOMAD_TASK_NAME": "web", "NOMAD_SECRETS_DIR": task + "/secrets"}, Namespace: "default", Region: "global",
		Token: func() string { return "tok" }})
	if err != nil {
		return "", Result{}, err
	}
	res, err := m.Render()
	if err != nil || len(res.Missing) > 0 {
		return "", res, err
	}
	b, rerr := os.ReadFile(res.Templates[0].Dest)
	if rerr != nil {
		t.Fatal(rerr)
	}
	return string(b), res, nil
}

func TestRender_Functions(t *testing.T) {
	f := newFake()
	f.put("nomad/jobs/app", map[string]string{"user": "admin", "password": "s3cret"})
	f.put("nomad/jobs/app/web", map[string]string{"x": "1"})
	f.svcs["db"] = []*structs.ServiceRegistration{{ID: "a", ServiceName: "db", Address: "10.0.0.1", Port: 5432, Tags: []string{"primary"}}, {ID: "b", ServiceName: "db", Address: "10.0.0.2", Port: 5433}}
	cases := []struct{ name, data, want string }{
		{"env", `{{ env "NOMAD_TASK_NAME" }}`, "web"},
		{"nomadVar item", `{{ with nomadVar "nomad/jobs/app" }}{{ .user }}:{{ .password }}{{ end }}`, "admin:s3cret"},
		{"nomadVar range", `{{ range $k, $v := nomadVar "nomad/jobs/app" }}{{ $k }}={{ $v }};{{ end }}`, "password=s3cret;user=admin;"},
		{"nomadVar toJSON", `{{ nomadVar "nomad/jobs/app" | toJSON }}`, `{"password":"s3cret","user":"admin"}`},
		{"nomadVar Keys", `{{ (nomadVar "nomad/jobs/app").Keys | join "," }}`, "password,user"},
		{"nomadVarExists", `{{ nomadVarExists "nomad/jobs/app" }} {{ nomadVarExists "nomad/jobs/none" }}`, "true false"},
		{"nomadVarList", `{{ range nomadVarList "nomad/jobs/app" }}{{ .Path }} {{ end }}`, "nomad/jobs/app nomad/jobs/app/web "},
		{"nomadService", `{{ range nomadService "db" }}{{ .Address }}:{{ .Port }} {{ end }}`, "10.0.0.1:5432 10.0.0.2:5433 "},
		{"nomadService choose", `{{ range nomadService 1 "k" "db" }}{{ .Name }}{{ end }}`, "db"},
		{"nomadServices", `{{ range nomadServices }}{{ .Name }}{{ .Tags }}{{ end }}`, "db[t]"},
		{"strings", `{{ "a,b" | split "," | join "-" }} {{ "Hi" | toUpper }} {{ "Hi" | toLower }} {{ "x.y" | replaceAll "." "_" }} [{{ "  t  " | trimSpace }}]`, "a-b HI hi x_y [t]"},
		{"base64", `{{ "hello" | base64Encode }} {{ "aGVsbG8=" | base64Decode }}`, "aGVsbG8= hello"},
		{"parseJSON", `{{ with parseJSON "{\"a\":{\"b\":2}}" }}{{ .a.b }}{{ end }}`, "2"},
		{"toJSONPretty", `{{ parseJSON "{\"a\":1}" | toJSONPretty }}`, "{\n  \"a\": 1\n}"},
		{"contains", `{{ range nomadService "db" }}{{ if .Tags | contains "primary" }}{{ .ID }}{{ end }}{{ end }}`, "a"},
		{"containsAny", `{{ if (split "," "a,b") | containsAny (split "," "x,b") }}yes{{ end }}`, "yes"},
		{"indent", `{{ "a\nb" | indent 2 }}`, "  a\n  b"},
		{"sprig", `{{ "x" | sprig_toUpper }}`, "X"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := renderOne(t, f, tmpl("local/out", c.data))
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
	if !strings.Contains(strings.Join(f.reads, "\n"), "nomad/jobs/app tok") {
		t.Fatalf("variables not read with the task's identity: %q", f.reads)
	}
}

func TestRender_ForeignFunctionFailsNamingIt(t *testing.T) {
	_, _, err := renderOne(t, newFake(), tmpl("local/out", `{{ key "x" }}`))
	if err == nil || !Fatal(err) || !strings.Contains(err.Error(), `"key" needs Consul`) {
		t.Fatalf("want a fatal error naming key and Consul, got %v", err)
	}
}

func TestRender_Delimiters(t *testing.T) {
	tp := tmpl("local/out", `[[ env "NOMAD_TASK_NAME" ]] {{ kept }}`)
	l, r := "[[", "]]"
	tp.LeftDelim, tp.RightDelim = &l, &r
	got, _, err := renderOne(t, newFake(), tp)
	if err != nil || got != "web {{ kept }}" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestRender_PermsAndDestination(t *testing.T) {
	tp := tmpl("${NOMAD_SECRETS_DIR}/app.env", "x")
	p := "600"
	tp.Perms = &p
	_, res, err := renderOne(t, newFake(), tp)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(res.Templates[0].Dest)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	if !strings.HasSuffix(res.Templates[0].Dest, "/web/secrets/app.env") {
		t.Fatalf("dest %s", res.Templates[0].Dest)
	}
	def, res2, err := renderOne(t, newFake(), tmpl("local/d", "y"))
	if err != nil || def != "y" {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(res2.Templates[0].Dest); fi.Mode().Perm() != 0o644 {
		t.Fatalf("default mode %v, want 0644", fi.Mode().Perm())
	}
	bad := "8"
	tp = tmpl("local/x", "x")
	tp.Perms = &bad
	if _, _, err := renderOne(t, newFake(), tp); err == nil || !strings.Contains(err.Error(), `perms "8"`) {
		t.Fatalf("want a perms error, got %v", err)
	}
}

func TestResolveDest_Escapes(t *testing.T) {
	alloc := "/a/alloc1"
	task := alloc + "/web"
	for dest, want := range map[string]string{
		"local/x":             task + "/local/x",
		"/local/x":            task + "/local/x",
		task + "/secrets/env": task + "/secrets/env",
		"../alloc/shared":     alloc + "/alloc/shared",
		"alloc/shared.conf":   alloc + "/alloc/shared.conf",
		"/alloc/data/x":       alloc + "/alloc/data/x",
		"alloc":               "",
		"../../etc/passwd":    "",
		"local/../../../x":    "",
		"":                    "",
		".":                   "",
	} {
		got, err := ResolveDest(task, alloc, dest)
		if want == "" {
			if err == nil {
				t.Errorf("%q: want an error, got %s", dest, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", dest, got, err, want)
		}
	}
	if _, err := ResolveSource(task, "../other/secret.tpl"); err == nil {
		t.Error("a source outside the task directory was accepted")
	}
	if p, err := ResolveSource(task, "local/app.tpl"); err != nil || p != task+"/local/app.tpl" {
		t.Errorf("source: %s %v", p, err)
	}
}

func TestRender_SourceFile(t *testing.T) {
	alloc, task := taskDirs(t)
	if err := os.WriteFile(filepath.Join(task, "local", "app.tpl"), []byte(`name={{ env "N" }}`), 0o644); err != nil {
		t.Fatal(err)
	}
	src, dest := "local/app.tpl", "local/app.conf"
	m, err := New(Config{Templates: []*structs.Template{{SourcePath: &src, DestPath: &dest}}, TaskDir: task, AllocDir: alloc, Env: map[string]string{"N": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Render(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(task, dest)); string(b) != "name=x" {
		t.Fatalf("got %q", b)
	}
	bad := "../../etc/passwd"
	if _, err := New(Config{Templates: []*structs.Template{{SourcePath: &bad, DestPath: &dest}}, TaskDir: task, AllocDir: alloc}); err == nil || !strings.Contains(err.Error(), "escapes the task directory") {
		t.Fatalf("want an escape error, got %v", err)
	}
}

func TestRender_ErrorOnMissingKey(t *testing.T) {
	f := newFake()
	f.put("nomad/jobs/app", map[string]string{"a": "1"})
	tp := tmpl("local/x", `{{ with parseJSON "{\"a\":1}" }}{{ .nokey }}{{ end }}`)
	yes := true
	tp.ErrMissingKey = &yes
	if _, _, err := renderOne(t, f, tp); err == nil || !strings.Contains(err.Error(), "nokey") {
		t.Fatalf("want a missing key error, got %v", err)
	}
	tp.ErrMissingKey = nil
	if got, _, err := renderOne(t, f, tp); err != nil || got != "<no value>" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestRender_MissingVariableBlocksThenRenders(t *testing.T) {
	f := newFake()
	alloc, task := taskDirs(t)
	m, err := New(Config{Templates: []*structs.Template{tmpl("local/x", `{{ with nomadVar "nomad/jobs/app" }}{{ .a }}{{ end }}`)},
		TaskDir: task, AllocDir: alloc, Backend: f, Namespace: "default", Region: "global", MaxWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Render()
	if err != nil {
		t.Fatal(err)
	}
	if want := "nomad.var.block(nomad/jobs/app@default.global)"; len(res.Missing) != 1 || res.Missing[0] != want {
		t.Fatalf("missing %q, want %q", res.Missing, want)
	}
	if _, err := os.Stat(filepath.Join(task, "local/x")); !os.IsNotExist(err) {
		t.Fatalf("a template missing its variable was written: %v", err)
	}
	if m.Static() {
		t.Fatal("a render missing a variable was reported static: nothing would watch for it")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := make(chan struct{}, 1)
	m.Watch(ctx, ch)
	f.put("nomad/jobs/app", map[string]string{"a": "1"})
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not see the variable appear")
	}
	res, err = m.Render()
	if err != nil || len(res.Missing) != 0 || !res.Templates[0].Changed {
		t.Fatalf("res %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(task, "local/x")); string(b) != "1" {
		t.Fatalf("got %q", b)
	}
	// Rendering again with nothing changed does not report a change.
	if res, _ = m.Render(); res.Templates[0].Changed {
		t.Fatal("an unchanged render was reported as changed")
	}
}

func TestRender_PermissionDenied(t *testing.T) {
	f := newFake()
	f.deny["nomad/jobs/other"] = true
	f.deny["list:nomad"] = true
	_, _, err := renderOne(t, f, tmpl("local/x", `{{ with nomadVar "nomad/jobs/other" }}{{ .a }}{{ end }}`))
	if err == nil || !Fatal(err) || !strings.Contains(err.Error(), "Permission denied") {
		t.Fatalf("want a fatal permission error, got %v", err)
	}
	got, _, err := renderOne(t, f, tmpl("local/x", `[{{ range nomadVarListSafe "nomad" }}{{ .Path }}{{ end }}]`))
	if err != nil || got != "[]" {
		t.Fatalf("nomadVarListSafe: %q, %v", got, err)
	}
}

func TestParseEnv(t *testing.T) {
	got, err := ParseEnv("# comment\nA=1\n\nexport B = two words \nC=\"q\\\"x\\n\"\nD='a b'\nE=x=y\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "1", "B": "two words", "C": "q\"x\n", "D": "a b", "E": "x=y"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %v", got)
	}
	if _, err := ParseEnv("A=1\nnot a pair\n"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("want an error naming line 2, got %v", err)
	}
}

// A template with once = true is rendered once: a later change of its
// variable neither rewrites it nor is watched for it.
func TestRender_Once(t *testing.T) {
	f := newFake()
	f.put("nomad/jobs/app", map[string]string{"a": "1"})
	alloc, task := taskDirs(t)
	tp := tmpl("local/x", `{{ with nomadVar "nomad/jobs/app" }}{{ .a }}{{ end }}`)
	yes := true
	tp.Once = &yes
	m, err := New(Config{Templates: []*structs.Template{tp}, TaskDir: task, AllocDir: alloc, Backend: f})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Render(); err != nil {
		t.Fatal(err)
	}
	f.put("nomad/jobs/app", map[string]string{"a": "2"})
	res, err := m.Render()
	if err != nil || len(res.Templates) != 0 || m.HasDeps() || !m.Static() {
		t.Fatalf("once template rendered again or watched: %+v, %v, deps %v", res, err, m.HasDeps())
	}
	if b, _ := os.ReadFile(filepath.Join(task, "local/x")); string(b) != "1" {
		t.Fatalf("got %q", b)
	}
}

// A task can plant symlinks in its own directories (a container sees
// local/ and secrets/). The client renders as root, so a destination
// whose directory is a link out of the allocation, or a source that is a
// link to a host file, must not lead it there: both are refused, and
// nothing is written outside.
func TestRender_SymlinksPlantedByTheTaskAreNotFollowedOut(t *testing.T) {
	alloc, task := taskDirs(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	// local/ replaced by a link to a host directory.
	if err := os.RemoveAll(filepath.Join(task, "local")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(task, "local")); err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Templates: []*structs.Template{tmpl("local/app.conf", "pwned")}, TaskDir: task, AllocDir: alloc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Render(); err == nil {
		t.Fatal("rendering through a link out of the allocation succeeded")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Fatalf("files written outside the allocation: %v", entries)
	}
	// A source file that links to a host file.
	if err := os.Remove(filepath.Join(task, "local")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(task, "local"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(task, "local", "app.tpl")); err != nil {
		t.Fatal(err)
	}
	src, dest := "local/app.tpl", "local/out"
	if _, err := New(Config{Templates: []*structs.Template{{SourcePath: &src, DestPath: &dest}}, TaskDir: task, AllocDir: alloc}); err == nil {
		t.Fatal("a source linking out of the task directory was read")
	}
}
