package httpapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/structs"
)

// wrongMethodCase is a request whose method its (known) route does not
// serve, and the Allow header it must carry.
type wrongMethodCase struct{ method, path, allow string }

// wrongMethodCases builds the cases: every public route of expectClass
// (Nomad's documented requirements, independent of routeRules) with each
// method it does not serve, and a few management-only and namespaced
// routes.
func wrongMethodCases() []wrongMethodCase {
	served := map[string][]string{} // path -> methods expectClass lists
	public := map[string]bool{}
	for key, class := range expectClass {
		method, path, _ := strings.Cut(key, " ")
		served[path] = append(served[path], method)
		if class == "public" {
			public[path] = true
		}
	}
	var cases []wrongMethodCase
	for path := range public {
		ok := map[string]bool{}
		for _, m := range served[path] {
			ok[m] = true
			if m == http.MethodPut || m == http.MethodPost {
				ok[http.MethodPut], ok[http.MethodPost] = true, true
			}
		}
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete} {
			if ok[m] {
				allow = append(allow, m)
			}
		}
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodPatch} {
			if !ok[m] {
				cases = append(cases, wrongMethodCase{m, path, strings.Join(allow, ", ")})
			}
		}
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].path+cases[i].method < cases[j].path+cases[j].method })
	return append(cases,
		wrongMethodCase{"PUT", "/v1/agent/self", "GET"},
		wrongMethodCase{"DELETE", "/v1/agent/self", "GET"},
		wrongMethodCase{"PUT", "/v1/evaluations", "GET, DELETE"},
		wrongMethodCase{"GET", "/v1/system/gc", "PUT, POST"},
		wrongMethodCase{"DELETE", "/v1/acl/tokens", "GET"},
		wrongMethodCase{"PUT", "/v1/operator/keyring/keys", "GET"},
		wrongMethodCase{"GET", "/v1/operator/keyring/rotate", "PUT, POST"},
		wrongMethodCase{"POST", "/v1/operator/raft/peer", "DELETE"},
		wrongMethodCase{"PATCH", "/v1/acl/policy/p1", "GET, PUT, POST, DELETE"},
		wrongMethodCase{"PATCH", "/v1/var/app/db", "GET, PUT, POST, DELETE"},
		wrongMethodCase{"GET", "/v1/namespace", "PUT, POST"},
		wrongMethodCase{"DELETE", "/v1/operator/snapshot", "GET, PUT, POST"},
		wrongMethodCase{"DELETE", "/v1/agent/schedulers/config", "GET, PUT, POST"},
		wrongMethodCase{"PUT", "/v1/job/web/summary", "GET"},
		wrongMethodCase{"GET", "/v1/job/web/restart/resume", "PUT, POST"},
		wrongMethodCase{"DELETE", "/v1/node/pools", "GET, PUT, POST"},
		// A literal segment owns its path over a ":id" pattern of the
		// same length, as Nomad's mux routes "self" and "onetime" to
		// their own handlers.
		wrongMethodCase{"DELETE", "/v1/acl/token/self", "GET"},
		wrongMethodCase{"PUT", "/v1/acl/token/self", "GET"},
		wrongMethodCase{"GET", "/v1/acl/token/onetime", "PUT, POST"},
		wrongMethodCase{"DELETE", "/v1/acl/token/onetime", "PUT, POST"},
	)
}

// A method a known route does not serve is 405 "Invalid method" with an
// Allow header, as Nomad answers, whether ACLs are on or off and whatever
// token comes with it (it was a 403 for any token but management, as the
// authorization table required management for methods it did not list);
// the handler is never reached.
func TestWrongMethodIs405(t *testing.T) {
	res := matrixResolver{
		"":         compileRules(t),
		"nopolicy": compileRules(t),
		"nsread":   compileRules(t, `namespace "default" { policy = "read" }`),
		"mgmt":     acl.ManagementACL,
	}
	aclOn := newEnv(t, nil)
	aclOn.srv.Config.Handler = NewHandler(Config{RPC: aclOn.rpc, FS: aclOn.fs, Agent: &fakeAgent{serverOK: true},
		Auth: &ACLAuthorizer{Resolver: res, RPC: aclOn.rpc}})
	aclOff := newEnv(t, func(c *Config) { c.Auth = nil })

	type setup struct {
		name   string
		env    *testEnv
		tokens []string
	}
	for _, st := range []setup{
		{"acl-off", aclOff, []string{"", "whatever"}},
		{"acl-on", aclOn, []string{"", "nopolicy", "nsread", "mgmt", "unknown-token"}},
	} {
		for _, tc := range wrongMethodCases() {
			for _, tok := range st.tokens {
				req, _ := http.NewRequest(tc.method, st.env.srv.URL+tc.path, strings.NewReader(`{}`))
				if tok != "" {
					req.Header.Set("X-Nomad-Token", tok)
				}
				st.env.rpc.mu.Lock()
				before := len(st.env.rpc.calls)
				st.env.rpc.mu.Unlock()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				st.env.rpc.mu.Lock()
				reached := len(st.env.rpc.calls) != before
				st.env.rpc.mu.Unlock()
				if resp.StatusCode != http.StatusMethodNotAllowed || string(body) != "Invalid method" ||
					resp.Header.Get("Allow") != tc.allow || reached {
					t.Errorf("%s %s %s token=%q: %d %q Allow=%q (reached handler: %v), want 405 \"Invalid method\" Allow=%q",
						st.name, tc.method, tc.path, tok, resp.StatusCode, body, resp.Header.Get("Allow"), reached, tc.allow)
				}
			}
		}
	}

	// What did not change: a served method is authorized as before, and
	// a path no rule knows still needs management.
	for _, tc := range []struct {
		method, path, tok string
		want              int
	}{
		{"GET", "/v1/agent/self", "nsread", 403},
		{"GET", "/v1/status/leader", "", 200},
		{"PUT", "/v1/acl/login", "nopolicy", 400},
		{"GET", "/v1/job/web/bogus", "nsread", 403},
		{"PATCH", "/v1/job/web/bogus", "nsread", 403},
		{"DELETE", "/v1/evaluations", "nsread", 403},
		{"GET", "/v1/acl/policy/p1", "", 404}, // reached the handler: the fake has no policy
		{"DELETE", "/v1/acl/policy/p1", "nsread", 403},
	} {
		code, _, body := aclOn.rawToken(t, tc.method, tc.path, tc.tok)
		if code != tc.want {
			t.Errorf("%s %s token=%q: %d %q, want %d", tc.method, tc.path, tc.tok, code, body, tc.want)
		}
	}
}

// rawToken performs a request with a token and returns status, headers
// and body.
func (e *testEnv) rawToken(t *testing.T, method, path, token string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Nomad-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// The 405 check answers from the authorization table, before any handler:
// so the table must list every method a handler serves. For each example
// request's path and each rule's pattern, every method the table refuses
// is one the handler itself refuses (405) or does not know the path for
// (404), called directly without the check.
func TestMethodRulesMatchHandlers(t *testing.T) {
	env := newEnv(t, nil)
	s := &server{cfg: Config{RPC: env.rpc, FS: env.fs, Agent: &fakeAgent{serverOK: true}, Auth: allowAll{},
		Logger: hclog.NewNullLogger(), Region: structs.DefaultRegion, MaxBodyBytes: DefaultMaxBodyBytes}}
	s.log = s.cfg.Logger
	raw := http.NewServeMux()
	var got error
	for _, rt := range s.routes() {
		h := rt.handler
		raw.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) { _, got = h(w, r) })
	}
	examples := authRoutes
	for _, rr := range routeRules {
		// Each rule's pattern too, with a made-up name in each variable.
		p := strings.NewReplacer("*", "x1").Replace(rr.pattern)
		p = strings.Join(strings.FieldsFunc(p, func(r rune) bool { return r == '/' }), "/")
		var segs []string
		for _, seg := range strings.Split(p, "/") {
			if strings.HasPrefix(seg, ":") {
				seg = "x1"
			}
			segs = append(segs, seg)
		}
		examples = append(examples, struct{ method, path, body string }{rr.method, "/" + strings.Join(segs, "/"), ""})
	}
	seen := map[string]bool{}
	for _, ar := range examples {
		path, query, _ := strings.Cut(ar.path, "?")
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodPatch, http.MethodHead} {
			if seen[m+" "+path] {
				continue
			}
			seen[m+" "+path] = true
			allow, bad := methodNotAllowed(m, path)
			if !bad {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			target := path
			if query != "" {
				target += "?" + query
			}
			req := httptest.NewRequest(m, target, strings.NewReader(ar.body)).WithContext(ctx)
			got = nil
			raw.ServeHTTP(httptest.NewRecorder(), req)
			cancel()
			code := 0
			if got != nil {
				code, _ = errorStatus(got)
			}
			if code != http.StatusMethodNotAllowed && code != http.StatusNotFound {
				t.Errorf("%s %s: the table allows only %q but the handler serves it (%v)", m, path, allow, got)
			}
		}
	}
}
