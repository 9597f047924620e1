package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"

	"github.com/drover-project/drover/internal/structs"
)

func searchEnv(t *testing.T) *testEnv {
	env := newEnv(t, nil)
	env.rpc.reply("Job.List", structs.JobListResponse{Jobs: []*structs.JobListStub{
		{ID: "web", Namespace: "default"}, {ID: "web-api", Namespace: "prod"}, {ID: "batch-web", Namespace: "default"}, {ID: "db", Namespace: "default"},
	}, QueryMeta: meta(40)})
	env.rpc.reply("Alloc.List", structs.AllocListResponse{Allocations: []*structs.AllocListStub{
		{ID: "a1b2c3d4-0000", Name: "web.frontend[0]", Namespace: "default", JobID: "web", TaskGroup: "frontend"},
	}, QueryMeta: meta(41)})
	env.rpc.reply("Node.List", structs.NodeListResponse{Nodes: []*structs.NodeListStub{{ID: "abcd-1234", Name: "worker-web-1"}}, QueryMeta: meta(12)})
	return env
}

// A fuzzy search finds names containing the text in each context, those
// starting with it first, with Nomad's scopes (namespace; node and alloc
// IDs; namespace and job of a group), as `nomad ui` and the UI's search
// box read them.
func TestSearchFuzzyShapes(t *testing.T) {
	env := searchEnv(t)
	code, hdr, body := env.raw(t, "POST", "/v1/search/fuzzy", `{"Text":"WEB","Context":"all","Namespace":"*"}`)
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	if hdr.Get("X-Nomad-Index") != "41" {
		t.Errorf("index = %q, want the highest list index 41", hdr.Get("X-Nomad-Index"))
	}
	var resp api.FuzzySearchResponse
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, m := range resp.Matches[contexts.Jobs] {
		jobs = append(jobs, m.ID+"@"+m.Scope[0])
	}
	if got := strings.Join(jobs, ","); got != "web@default,web-api@prod,batch-web@default" {
		t.Errorf("jobs = %s", got)
	}
	if n := resp.Matches[contexts.Nodes]; len(n) != 1 || n[0].ID != "worker-web-1" || n[0].Scope[0] != "abcd-1234" {
		t.Errorf("nodes = %+v", n)
	}
	if a := resp.Matches[contexts.Allocs]; len(a) != 1 || a[0].Scope[1] != "a1b2c3d4-0000" {
		t.Errorf("allocs = %+v", a)
	}
	if env.rpc.last(t, "Job.List").(*structs.JobListRequest).Namespace != "*" {
		t.Error("the body's namespace was not used")
	}
	// Groups, tasks, commands and images are found in the job definitions.
	env.rpc.handlers["Job.GetJob"] = func(args, reply any) error {
		a := args.(*structs.JobSpecificRequest)
		job := &structs.Job{ID: a.JobID, Namespace: a.Namespace, TaskGroups: []*structs.TaskGroup{{Name: "frontend", Tasks: []*structs.Task{
			{Name: "nginx", Config: map[string]any{"image": "nginx:1.27", "command": "/usr/sbin/nginx"}},
		}}}}
		reply.(*structs.SingleJobResponse).Job = job
		return nil
	}
	_, _, body = env.raw(t, "POST", "/v1/search/fuzzy", `{"Text":"ngin","Context":"all"}`)
	resp = api.FuzzySearchResponse{}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if c := resp.Matches[contexts.Commands]; len(c) != 4 || c[0].ID != "/usr/sbin/nginx" || strings.Join(c[0].Scope, "/") != "default/web/frontend/nginx" {
		t.Errorf("commands = %+v", c)
	}
	if im := resp.Matches[contexts.Images]; len(im) != 4 || im[0].ID != "nginx:1.27" {
		t.Errorf("images = %+v", im)
	}
	if tk := resp.Matches[contexts.Tasks]; len(tk) != 4 || strings.Join(tk[0].Scope, "/") != "default/web/frontend" {
		t.Errorf("tasks = %+v", tk)
	}
	_, _, body = env.raw(t, "POST", "/v1/search/fuzzy", `{"Text":"front","Context":"groups"}`)
	resp = api.FuzzySearchResponse{}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if g := resp.Matches[contexts.Groups]; len(g) != 4 || g[0].ID != "frontend" || len(resp.Matches) != 1 {
		t.Errorf("groups = %+v", resp.Matches)
	}
}

// A prefix search matches IDs from their start and truncates at 20.
func TestSearchPrefix(t *testing.T) {
	env := searchEnv(t)
	var many []*structs.JobListStub
	for i := 0; i < 25; i++ {
		many = append(many, &structs.JobListStub{ID: "svc-" + string(rune('a'+i))})
	}
	env.rpc.reply("Job.List", structs.JobListResponse{Jobs: many, QueryMeta: meta(3)})
	code, _, body := env.raw(t, "PUT", "/v1/search", `{"Prefix":"svc-","Context":"jobs"}`)
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	var resp api.SearchResponse
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Matches[contexts.Jobs]) != 20 || !resp.Truncations[contexts.Jobs] {
		t.Errorf("jobs = %d truncated=%v, want 20 and true", len(resp.Matches[contexts.Jobs]), resp.Truncations[contexts.Jobs])
	}
	if _, ok := resp.Matches[contexts.Nodes]; ok {
		t.Error("a jobs search returned nodes")
	}
	_, _, body = env.raw(t, "PUT", "/v1/search", `{"Prefix":"abc","Context":"all"}`)
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatal(err)
	}
	if n := resp.Matches[contexts.Nodes]; len(n) != 1 || n[0] != "abcd-1234" {
		t.Errorf("nodes = %v", n)
	}
}

// Bad searches are 4xx naming what is wrong.
func TestSearchBadInput(t *testing.T) {
	env := searchEnv(t)
	for _, c := range []struct {
		method, path, body string
		code               int
		msg                string
	}{
		{"POST", "/v1/search/fuzzy", `{"Text":"w","Context":"all"}`, 400, "at least 2 characters"},
		{"POST", "/v1/search/fuzzy", `{"Text":"web","Context":"bogus"}`, 400, `Context "bogus"`},
		{"PUT", "/v1/search", `{"Prefix":"w","Context":"plugins"}`, 400, `Context "plugins"`},
		{"PUT", "/v1/search", `{"Prefix":`, 400, ""},
		{"GET", "/v1/search", "", http.StatusMethodNotAllowed, "Invalid method"},
	} {
		code, _, body := env.raw(t, c.method, c.path, c.body)
		if code != c.code || !strings.Contains(body, c.msg) {
			t.Errorf("%s %s %s: %d %q, want %d containing %q", c.method, c.path, c.body, code, body, c.code, c.msg)
		}
	}
}

// Search is authorized in the namespace it searches: ?namespace=, else the
// body's Namespace. The route checked only ?namespace= (default when
// absent) while the handler searched the body's, so a token reading only
// default found another namespace's jobs, allocations, evaluations and
// deployments by naming it in the body; and node IDs and names were
// searchable without node:read.
func TestSearchACLNamespaceOfTheBody(t *testing.T) {
	env := searchEnv(t)
	env.srv.Config.Handler = NewHandler(Config{RPC: env.rpc, FS: env.fs, Agent: &fakeAgent{serverOK: true},
		Auth: &ACLAuthorizer{Resolver: matrixResolver{
			"read-default": compileRules(t, `namespace "default" { policy = "read" }`),
			"read-prod":    compileRules(t, `namespace "prod" { policy = "read" }`),
			"nodes":        compileRules(t, `namespace "default" { policy = "read" }`, `node { policy = "read" }`),
		}, RPC: env.rpc}})
	do := func(token, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("PUT", env.srv.URL+path, strings.NewReader(body))
		req.Header.Set("X-Nomad-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	listed := func() string {
		return env.rpc.last(t, "Job.List").(*structs.JobListRequest).Namespace
	}
	for _, path := range []string{"/v1/search", "/v1/search/fuzzy"} {
		body := `{"Prefix":"","Text":"web","Context":"jobs","Namespace":"prod"}`
		if code, b := do("read-default", path, body); code != 403 || b != "Permission denied" {
			t.Errorf("%s: a default-only token searching prod: %d %s", path, code, b)
		}
		if code, b := do("read-prod", path, body); code != 200 || listed() != "prod" {
			t.Errorf("%s: a prod token searching prod: %d %s (listed %q)", path, code, b, listed())
		}
		// ?namespace= wins over the body, as in Nomad: the search is of
		// the namespace the token was checked against.
		if code, b := do("read-default", path+"?namespace=default", body); code != 200 || listed() != "default" {
			t.Errorf("%s: ?namespace=default with a body naming prod: %d %s (listed %q)", path, code, b, listed())
		}
		// "*" is searched, filtered by the token in the list reads.
		if code, b := do("read-default", path, `{"Prefix":"","Text":"web","Context":"jobs","Namespace":"*"}`); code != 200 || listed() != "*" {
			t.Errorf("%s: a wildcard search: %d %s", path, code, b)
		}

		// Nodes need node:read: alone a 403, within "all" left out.
		nodesBody := `{"Prefix":"","Text":"web","Context":"nodes"}`
		if code, b := do("read-default", path, nodesBody); code != 403 {
			t.Errorf("%s: nodes without node:read: %d %s", path, code, b)
		}
		if code, b := do("nodes", path, nodesBody); code != 200 || !strings.Contains(b, "abcd-1234") {
			t.Errorf("%s: nodes with node:read: %d %s", path, code, b)
		}
		code, b := do("read-default", path, `{"Prefix":"","Text":"web","Context":"all"}`)
		if code != 200 || strings.Contains(b, "abcd-1234") || strings.Contains(b, "worker-web-1") {
			t.Errorf("%s: context all without node:read: %d %s", path, code, b)
		}
	}
}
