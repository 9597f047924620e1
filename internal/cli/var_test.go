package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// var get -item prints the item's value as it is stored, with no newline
// added (Nomad: "ideal for piping to other processes"): a key or
// certificate written to a file with `var get -item key path > key.pem`
// gained a byte, and a value that ends without one (a token) did not
// round-trip.
func TestVarGetItemPrintsTheValueAsIs(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/var/app/tls": &api.Variable{Namespace: "default", Path: "app/tls", ModifyIndex: 7,
			Items: api.VariableItems{"key": "-----BEGIN KEY-----\nabc\n-----END KEY-----\n", "token": "s3cr3t"}},
	}}
	srv := f.server(t)
	for item, want := range map[string]string{
		"key":   "-----BEGIN KEY-----\nabc\n-----END KEY-----\n",
		"token": "s3cr3t",
	} {
		out, errb, code := run(t, srv, "var", "get", "-item", item, "app/tls")
		if code != 0 || out != want {
			t.Errorf("var get -item %s: exit %d, stdout %q (stderr %q), want exactly %q", item, code, out, errb, want)
		}
	}
}

// A bad variable specification file is refused naming the file and where
// in it: a value that is not a string, a syntax error, a key a
// specification does not have. Before, the file was not named, the JSON
// error had no line, and an unknown block (itemz) was ignored, so the
// error was "a variable needs at least one item". What `var get -out json`
// prints is a specification var put takes back.
func TestVarPutSpecErrorsNameTheFileAndLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f := &fake{routes: map[string]any{
		"PUT /v1/var/app/db": &api.Variable{Namespace: "default", Path: "app/db", ModifyIndex: 9, Items: api.VariableItems{"a": "1"}},
	}}
	srv := f.server(t)
	for _, tc := range []struct{ file, body, want string }{
		{"number.json", "{\n  \"Path\": \"app/db\",\n  \"Items\": {\"a\": 1}\n}\n", "number.json:3:"},
		{"cut.json", "{\n  \"Path\": \"app/db\",\n", "cut.json"},
		{"typo.json", "{\"Path\": \"app/db\", \"Itemz\": {\"a\": \"1\"}}", `unknown field "Itemz"`},
		{"typo.nv.hcl", "path = \"app/db\"\n\nitemz {\n  a = \"1\"\n}\n", `typo.nv.hcl:3: unknown key "itemz"`},
		{"list.nv.hcl", "path = \"app/db\"\nitems {\n  a = [\"1\"]\n}\n", "list.nv.hcl"},
	} {
		p := write(tc.file, tc.body)
		_, errb, code := run(t, srv, "var", "put", "@"+p)
		if code != 1 || !strings.Contains(errb, tc.want) {
			t.Errorf("var put @%s: exit %d, stderr %q, want it to name %q", tc.file, code, errb, tc.want)
		}
	}

	got := `{
  "Namespace": "default",
  "Path": "app/db",
  "CreateIndex": 5,
  "ModifyIndex": 9,
  "CreateTime": 1700000000000000000,
  "ModifyTime": 1700000000000000000,
  "Items": {"a": "1"}
}`
	if out, errb, code := run(t, srv, "var", "put", "@"+write("roundtrip.json", got)); code != 0 {
		t.Fatalf("var put of var get -out json's output: exit %d\n%s%s", code, out, errb)
	}
}

// var list takes Nomad's -out (table, json, terse), -filter, -per-page
// and -page-token; it refused -out ("flag provided but not defined"), so
// a script's `var list -out terse` or `-filter` failed.
func TestVarListOutputsAndFilters(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/vars": []*api.VariableMetadata{
			{Namespace: "default", Path: "app/db", ModifyIndex: 3},
			{Namespace: "default", Path: "app/web", ModifyIndex: 4},
		},
	}}
	srv := f.server(t)
	if out, errb, code := run(t, srv, "var", "list", "-out", "terse", "app/"); code != 0 || out != "app/db\napp/web\n" {
		t.Fatalf("-out terse: exit %d %q %q", code, out, errb)
	}
	out, errb, code := run(t, srv, "var", "list", "-out", "json", "-filter", `Path contains "db"`, "-per-page", "2", "-page-token", "default.app/a")
	var got []*api.VariableMetadata
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 2 {
		t.Fatalf("-out json: exit %d %q %q", code, out, errb)
	}
	last := f.seen[len(f.seen)-1]
	for _, want := range []string{"filter=Path+contains", "per_page=2", "next_token=default.app%2Fa"} {
		if !strings.Contains(last, want) {
			t.Errorf("request %q lacks %q", last, want)
		}
	}
	if _, errb, code := run(t, srv, "var", "list", "-out", "yaml"); code != 1 || !strings.Contains(errb, "-out") {
		t.Errorf("-out yaml: exit %d %q", code, errb)
	}
}

// var lock waits for a lock another holder has, then runs its command: it
// gave up at once ("Error acquiring the lock ... 409"), so of two
// operators (or cron jobs) running var lock on the same path, the second
// failed instead of running after the first.
func TestVarLockWaitsForAHeldLock(t *testing.T) {
	old := varLockRetry
	varLockRetry = 10 * time.Millisecond
	t.Cleanup(func() { varLockRetry = old })
	var mu sync.Mutex
	acquires, releases := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("X-Nomad-Index", "10")
		q := r.URL.Query()
		switch {
		case r.Method == http.MethodGet:
			http.Error(w, "variable not found", http.StatusNotFound)
		case q.Has("lock-acquire"):
			acquires++
			if acquires < 3 {
				w.WriteHeader(http.StatusConflict)
				json.NewEncoder(w).Encode(&api.Variable{Path: "app/l", Lock: &api.VariableLock{TTL: "15s"}})
				return
			}
			json.NewEncoder(w).Encode(&api.Variable{Path: "app/l", ModifyIndex: 10, Lock: &api.VariableLock{ID: "l1", TTL: "15s", LockDelay: "15s"}})
		case q.Has("lock-release"):
			releases++
			json.NewEncoder(w).Encode(&api.Variable{Path: "app/l", ModifyIndex: 11})
		default:
			http.Error(w, "unexpected "+r.Method+" "+r.URL.String(), http.StatusBadRequest)
		}
	}))
	t.Cleanup(srv.Close)
	marker := filepath.Join(t.TempDir(), "ran")
	_, errb, code := run(t, srv, "var", "lock", "app/l", "touch", marker)
	if code != 0 {
		t.Fatalf("var lock exited %d: %s", code, errb)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the command did not run once the lock was free")
	}
	mu.Lock()
	defer mu.Unlock()
	if acquires != 3 || releases != 1 || !strings.Contains(errb, "waiting") {
		t.Fatalf("acquires %d, releases %d, stderr %q: want the held lock waited for, then released", acquires, releases, errb)
	}
}

// var get and var list print JSON when stdout is not a terminal and no
// -out is given, as Nomad's do ("table" on a terminal, "json" when
// redirected): `var get path | jq .Items.x` got a table.
func TestVarGetAndListPrintJSONWhenRedirected(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/var/app/tls": &api.Variable{Namespace: "default", Path: "app/tls", ModifyIndex: 7, Items: api.VariableItems{"token": "s3cr3t"}},
		"GET /v1/vars":        []*api.VariableMetadata{{Namespace: "default", Path: "app/tls", ModifyIndex: 7}},
	}}
	srv := f.server(t)
	out, errb, code := run(t, srv, "var", "get", "app/tls")
	var v api.Variable
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Items["token"] != "s3cr3t" {
		t.Fatalf("var get, redirected: exit %d, stdout %q (stderr %q), want the variable as JSON", code, out, errb)
	}
	out, errb, code = run(t, srv, "var", "list")
	var list []*api.VariableMetadata
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Path != "app/tls" {
		t.Fatalf("var list, redirected: exit %d, stdout %q (stderr %q), want the list as JSON", code, out, errb)
	}
	if out, _, code := run(t, srv, "var", "get", "-out", "table", "app/tls"); code != 0 || !strings.Contains(out, "Check Index = 7") {
		t.Fatalf("var get -out table: %d %q", code, out)
	}
}
