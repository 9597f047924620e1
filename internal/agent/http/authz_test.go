package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/structs"
)

// Every route of router.go has rules in routeRules, and every example
// request of authRoutes matches one (none falls through to the
// management-only default by accident).
func TestRouteRulesCoverEveryRoute(t *testing.T) {
	for _, rt := range (&server{}).routes() {
		p := strings.TrimSuffix(rt.pattern, "/")
		found := false
		for _, rr := range routeRules {
			if rr.pattern == p || strings.HasPrefix(rr.pattern, p+"/") {
				found = true
			}
		}
		if !found {
			t.Errorf("route %s has no rule in routeRules", rt.pattern)
		}
	}
	for _, ar := range authRoutes {
		path := strings.SplitN(ar.path, "?", 2)[0]
		if matchRoute(ar.method, path) == nil {
			t.Errorf("%s %s matches no rule in routeRules", ar.method, path)
		}
	}
}

// expectClass is Nomad's requirement for each example request, written
// from Nomad's API documentation ("ACL Required") independently of
// routeRules.
var expectClass = map[string]string{
	"PUT /v1/search": "nsRead", "PUT /v1/search/fuzzy": "nsRead", "GET /v1/services": "nsRead",
	"GET /v1/service/api": "nsRead", "DELETE /v1/service/api/_nomad-task-a1-web-api-http": "nsWrite",
	"GET /v1/job/web/services": "nsRead", "GET /v1/allocation/a1/services": "nsRead",
	"GET /v1/jobs": "nsRead", "PUT /v1/jobs": "nsWrite", "PUT /v1/jobs/parse": "nsRead",
	"PUT /v1/validate/job": "nsRead", "GET /v1/job/web": "nsRead", "POST /v1/job/web": "nsWrite",
	"DELETE /v1/job/web": "nsWrite", "GET /v1/job/web/allocations": "nsRead",
	"GET /v1/job/web/evaluations": "nsRead", "GET /v1/job/web/deployments": "nsRead",
	"GET /v1/job/web/deployment": "nsRead", "GET /v1/job/web/summary": "nsRead",
	"GET /v1/job/web/versions": "nsRead", "PUT /v1/job/web/plan": "nsWrite",
	"PUT /v1/job/web/evaluate": "nsWrite", "PUT /v1/job/web/restart": "nsWrite",
	"GET /v1/job/web/restart": "nsWrite", "DELETE /v1/job/web/restart": "nsWrite",
	"PUT /v1/job/web/restart/resume": "nsWrite", "GET /v1/allocations": "nsRead",
	"GET /v1/allocation/a1": "nsRead", "PUT /v1/allocation/a1/stop": "nsWrite",
	"GET /v1/evaluations": "nsRead", "DELETE /v1/evaluations": "mgmt",
	"GET /v1/evaluation/e1": "nsRead", "GET /v1/evaluation/e1/allocations": "nsRead",
	"GET /v1/nodes": "node", "GET /v1/node/n1": "node", "GET /v1/node/n1/allocations": "node",
	"PUT /v1/node/n1/eligibility": "node", "PUT /v1/node/n1/drain": "node",
	"GET /v1/deployments": "nsRead", "GET /v1/deployment/d1": "nsRead",
	"GET /v1/deployment/allocations/d1": "nsRead", "PUT /v1/deployment/fail/d1": "nsWrite",
	"PUT /v1/deployment/pause/d1": "nsWrite", "PUT /v1/deployment/promote/d1": "nsWrite",
	"PUT /v1/deployment/allocation-health/d1": "nsWrite", "PUT /v1/deployment/unblock/d1": "nsWrite",
	"PUT /v1/job/web/periodic/force": "nsWrite", "PUT /v1/job/web/dispatch": "nsWrite",
	"PUT /v1/job/web/dispatch/payload": "nsWrite", "PUT /v1/job/web/promote": "nsWrite",
	"GET /v1/status/leader": "public", "GET /v1/status/peers": "public", "GET /v1/regions": "public",
	"GET /v1/volume/csi/vol1": "nsRead", "PUT /v1/volume/csi/vol1": "nsWrite", "DELETE /v1/volume/csi/vol1": "nsWrite",
	// host-volume-delete is in no namespace policy shorthand (write has
	// host-volume-create only): the matrix's tokens other than management
	// lack it.
	"GET /v1/volume/host/hv1": "nsRead", "DELETE /v1/volume/host/hv1": "mgmt",
	"GET /v1/volumes": "nsRead", "GET /v1/plugins": "plugin", "GET /v1/plugin/csi/ebs": "plugin",
	"GET /v1/scaling/policies": "nsRead", "GET /v1/scaling/policy/p1": "nsRead",
	"GET /v1/namespaces": "any", "GET /v1/namespace/default": "nsRead",
	"GET /v1/agent/self": "agent", "GET /v1/agent/members": "node", "GET /v1/agent/health": "public",
	"GET /v1/metrics": "public", "GET /.well-known/jwks.json": "public",
	"GET /v1/client/stats": "node", "GET /v1/client/metadata": "node", "POST /v1/client/metadata": "node",
	"GET /v1/client/identity": "node", "POST /v1/client/identity/renew": "node",
	"GET /v1/operator/raft/configuration": "operator", "PUT /v1/node/n1/purge": "node",
	"GET /v1/agent/monitor": "agent", "GET /v1/agent/schedulers": "agent",
	"PUT /v1/agent/schedulers/config": "agent", "DELETE /v1/operator/raft/peer": "operator",
	"GET /v1/operator/scheduler/configuration": "operator", "PUT /v1/operator/scheduler/configuration": "operator",
	"GET /v1/client/fs/ls/a1": "nsWrite", "GET /v1/client/fs/stat/a1": "nsWrite",
	"GET /v1/client/fs/cat/a1": "nsWrite", "GET /v1/client/fs/readat/a1": "nsWrite",
	"GET /v1/client/fs/stream/a1": "nsWrite", "GET /v1/client/fs/logs/a1": "nsWrite",
	"GET /v1/client/allocation/a1/exec": "nsWrite", "GET /v1/client/allocation/a1/stats": "nsRead",
	"PUT /v1/client/allocation/a1/restart": "nsWrite", "PUT /v1/client/allocation/a1/signal": "nsWrite",
	"GET /v1/client/allocation/a1/checks": "nsRead", "GET /v1/allocation/a1/checks": "nsRead",
	"GET /v1/event/stream": "nsRead", "GET /v1/evaluations/count": "nsRead",
	"PUT /v1/system/gc": "mgmt", "PUT /v1/system/reconcile/summaries": "mgmt",
	"PUT /v1/client/gc": "node", "PUT /v1/client/allocation/a1/gc": "nsWrite",
	// The official client's Nodes().GC and GcAlloc use GET.
	"GET /v1/client/gc": "node", "GET /v1/client/allocation/a1/gc": "nsWrite",
	"PUT /v1/acl/bootstrap": "public", "GET /v1/acl/policies": "any", "GET /v1/acl/policy/p1": "any",
	"PUT /v1/acl/policy/p1": "mgmt", "DELETE /v1/acl/policy/p1": "mgmt", "GET /v1/acl/tokens": "mgmt",
	"PUT /v1/acl/token": "mgmt", "GET /v1/acl/token/self": "any", "GET /v1/acl/token/t1": "any",
	"PUT /v1/acl/token/t1": "mgmt", "DELETE /v1/acl/token/t1": "mgmt", "PUT /v1/acl/token/onetime": "any",
	"PUT /v1/acl/token/onetime/exchange": "public", "GET /v1/acl/roles": "any", "PUT /v1/acl/role": "mgmt",
	"GET /v1/acl/role/r1": "any", "PUT /v1/acl/role/r1": "mgmt", "DELETE /v1/acl/role/r1": "mgmt",
	"GET /v1/acl/role/name/r1": "any", "GET /v1/acl/auth-methods": "public", "PUT /v1/acl/auth-method": "mgmt",
	"GET /v1/acl/auth-method/m1": "mgmt", "PUT /v1/acl/auth-method/m1": "mgmt",
	"DELETE /v1/acl/auth-method/m1": "mgmt", "GET /v1/acl/binding-rules": "mgmt",
	"PUT /v1/acl/binding-rule": "mgmt", "GET /v1/acl/binding-rule/b1": "mgmt",
	"PUT /v1/acl/binding-rule/b1": "mgmt", "DELETE /v1/acl/binding-rule/b1": "mgmt",
	"PUT /v1/acl/login": "public",
	"PUT /v1/namespace": "mgmt", "PUT /v1/namespace/team-a": "mgmt", "DELETE /v1/namespace/team-a": "mgmt",
	"GET /v1/node/pools": "any", "PUT /v1/node/pools": "mgmt", "GET /v1/node/pool/gpu": "mgmt",
	"PUT /v1/node/pool/gpu": "mgmt", "DELETE /v1/node/pool/gpu": "mgmt", "GET /v1/node/pool/gpu/nodes": "mgmt",
	"GET /v1/node/pool/gpu/jobs": "mgmt", "GET /v1/agent/pprof/heap": "agent",
	"PUT /v1/acl/oidc/auth-url": "public", "PUT /v1/acl/oidc/complete-auth": "public",
	// Routes of other branches, for their merge.
	"PUT /v1/agent/join": "agent", "PUT /v1/agent/force-leave": "agent", "GET /v1/agent/servers": "agent",
	"PUT /v1/agent/servers": "agent", "GET /v1/agent/keyring/list": "agent", "PUT /v1/agent/keyring/install": "agent",
	"PUT /v1/operator/raft/transfer-leadership": "operator", "GET /v1/operator/snapshot": "mgmt",
	"PUT /v1/operator/snapshot": "mgmt", "GET /v1/operator/autopilot/configuration": "operator",
	"PUT /v1/operator/autopilot/configuration": "operator", "GET /v1/operator/autopilot/health": "operator",
	"PUT /v1/acl/identity/client-introduction-token": "mgmt",
	// Variables are checked per path by the Variables endpoint (any token
	// reaches it); the keyring is management only.
	"GET /.well-known/openid-configuration": "public", "GET /v1/vars": "any", "PUT /v1/var/app/db": "any",
	"GET /v1/operator/keyring/keys": "mgmt", "PUT /v1/operator/keyring/rotate": "mgmt",
	"DELETE /v1/operator/keyring/key/k1": "mgmt",
}

// matrixResolver resolves the matrix's tokens with real compiled policies.
type matrixResolver map[string]*acl.ACL

func (m matrixResolver) ResolveACL(secret string) (*acl.ACL, error) {
	a, ok := m[secret]
	if !ok {
		return nil, structs.NewErrCoded(403, "ACL token not found")
	}
	return a, nil
}

func compileRules(t *testing.T, rules ...string) *acl.ACL {
	t.Helper()
	var ps []*acl.Policy
	for _, r := range rules {
		p, err := acl.Parse(r)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return acl.NewACL(false, ps)
}

// TestACLMatrix is reliability figure R7: every route × {no token, a token
// whose policy grants nothing, namespace-read in default, namespace-write
// in another namespace, management}, each answer checked against Nomad's
// requirement. A leak is a request that should be refused reaching its
// handler; an over-refusal is the opposite. Both fail the test.
func TestACLMatrix(t *testing.T) {
	res := matrixResolver{
		"":            compileRules(t), // anonymous without an "anonymous" policy
		"nopolicy":    compileRules(t),
		"nsread":      compileRules(t, `namespace "default" { policy = "read" }`),
		"write-other": compileRules(t, `namespace "other" { policy = "write" }`),
		"mgmt":        acl.ManagementACL,
	}
	tokens := []string{"", "nopolicy", "nsread", "write-other", "mgmt"}
	env := newEnv(t, nil)
	env.srv.Config.Handler = NewHandler(Config{RPC: env.rpc, FS: env.fs, Agent: &fakeAgent{serverOK: true},
		Auth: &ACLAuthorizer{Resolver: res, RPC: env.rpc}})

	allowed := func(class, tok, nsParam string) bool {
		switch class {
		case "public", "any":
			return true
		case "nsRead":
			return tok == "mgmt" || (tok == "nsread" && nsParam == "") || (tok == "write-other" && nsParam == "other")
		case "nsWrite":
			return tok == "mgmt" || (tok == "write-other" && nsParam == "other")
		}
		return tok == "mgmt" // mgmt, node, agent, operator
	}
	lookups := map[string]bool{"Alloc.GetAlloc": true, "Eval.GetEval": true, "Deployment.GetDeployment": true}
	cases, leaks, over := 0, 0, 0
	for _, ar := range authRoutes {
		path := strings.SplitN(ar.path, "?", 2)[0]
		key := ar.method + " " + path
		class, ok := expectClass[key]
		if !ok {
			t.Errorf("%s has no expected class", key)
			continue
		}
		variants := []string{""}
		if (class == "nsRead" || class == "nsWrite") && !strings.HasPrefix(path, "/v1/namespace/") {
			variants = append(variants, "other")
		}
		for _, nsParam := range variants {
			for _, tok := range tokens {
				u := ar.path
				if nsParam != "" {
					sep := "?"
					if strings.Contains(u, "?") {
						sep = "&"
					}
					u += sep + "namespace=" + nsParam
				}
				req, _ := http.NewRequest(ar.method, env.srv.URL+u, strings.NewReader(ar.body))
				if tok != "" {
					req.Header.Set("X-Nomad-Token", tok)
				}
				env.rpc.mu.Lock()
				before := len(env.rpc.calls)
				env.rpc.mu.Unlock()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				env.rpc.mu.Lock()
				reached := false
				for _, c := range env.rpc.calls[before:] {
					if !lookups[c.Method] {
						reached = true
					}
				}
				env.rpc.mu.Unlock()
				cases++
				want := allowed(class, tok, nsParam)
				denied := resp.StatusCode == http.StatusForbidden
				switch {
				case !want && (!denied || reached):
					leaks++
					t.Errorf("LEAK %s ns=%q token=%q: %d %s (reached handler: %v)", key, nsParam, tok, resp.StatusCode, body, reached)
				case !want && string(body) != "Permission denied":
					t.Errorf("%s token=%q refused with %q, want \"Permission denied\"", key, tok, body)
				case want && denied:
					over++
					t.Errorf("%s ns=%q token=%q refused: %s", key, nsParam, tok, body)
				}
			}
		}
	}
	t.Logf("R7 matrix: %d routes, %d requests, %d leaks, %d over-refusals", len(authRoutes), cases, leaks, over)
}

// A list across namespaces keeps only what the token may read.
func TestACLWildcardListFiltered(t *testing.T) {
	res := matrixResolver{"nsread": compileRules(t, `namespace "team-*" { policy = "read" }`, `namespace "team-b" { policy = "deny" }`)}
	env := newEnv(t, nil)
	env.srv.Config.Handler = NewHandler(Config{RPC: env.rpc, Agent: &fakeAgent{serverOK: true}, Auth: &ACLAuthorizer{Resolver: res, RPC: env.rpc}})
	env.rpc.reply("Job.List", structs.JobListResponse{Jobs: []*structs.JobListStub{
		{ID: "a", Namespace: "team-a"}, {ID: "b", Namespace: "team-b"}, {ID: "d", Namespace: "default"},
	}})
	req, _ := http.NewRequest("GET", env.srv.URL+"/v1/jobs?namespace=*", nil)
	req.Header.Set("X-Nomad-Token", "nsread")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"team-a"`) || strings.Contains(string(body), `"team-b"`) || strings.Contains(string(body), `"default"`) {
		t.Fatalf("got %d %s, want only team-a's job", resp.StatusCode, body)
	}
}

// A job write without ?namespace= is checked in the job's own namespace,
// as the job endpoints register it there; the body still reaches the
// handler whole.
func TestACLJobBodyNamespace(t *testing.T) {
	res := matrixResolver{"write-other": compileRules(t, `namespace "other" { policy = "write" }`)}
	env := newEnv(t, nil)
	env.srv.Config.Handler = NewHandler(Config{RPC: env.rpc, Agent: &fakeAgent{serverOK: true}, Auth: &ACLAuthorizer{Resolver: res, RPC: env.rpc}})
	for _, tc := range []struct {
		query, jobNS string
		want         int
	}{
		{"", "other", 200},
		{"", "", 403},
		{"", "default", 403},
		{"?namespace=default", "other", 403},
	} {
		body := `{"Job":{"ID":"web","Name":"web","Namespace":"` + tc.jobNS + `","Type":"batch","TaskGroups":[]}}`
		req, _ := http.NewRequest("PUT", env.srv.URL+"/v1/jobs"+tc.query, strings.NewReader(body))
		req.Header.Set("X-Nomad-Token", "write-other")
		env.rpc.mu.Lock()
		before := len(env.rpc.calls)
		env.rpc.mu.Unlock()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		denied := resp.StatusCode == 403
		if denied != (tc.want == 403) {
			t.Errorf("query %q job namespace %q: %d %s", tc.query, tc.jobNS, resp.StatusCode, b)
		}
		env.rpc.mu.Lock()
		if !denied {
			var reg *structs.JobRegisterRequest
			for _, c := range env.rpc.calls[before:] {
				if r, ok := c.Args.(*structs.JobRegisterRequest); ok {
					reg = r
				}
			}
			if reg == nil || reg.Job == nil || reg.Job.ID != "web" {
				t.Errorf("the handler did not get the job body: %+v", reg)
			}
		}
		env.rpc.mu.Unlock()
	}
}

// A node pool write names its pool in the body: the token needs write on
// that pool.
func TestACLNodePoolBody(t *testing.T) {
	res := matrixResolver{"gpu": compileRules(t, `node_pool "gpu" { policy = "write" }`)}
	env := newEnv(t, nil)
	env.srv.Config.Handler = NewHandler(Config{RPC: env.rpc, Agent: &fakeAgent{serverOK: true}, Auth: &ACLAuthorizer{Resolver: res, RPC: env.rpc}})
	for _, tc := range []struct {
		path, body string
		want       int
	}{
		{"/v1/node/pools", `{"Name":"gpu"}`, 200},
		{"/v1/node/pools", `{"Name":"cpu"}`, 403},
		{"/v1/node/pool/gpu", `{"Name":"gpu"}`, 200},
		{"/v1/acl/identity/client-introduction-token", `{"NodePool":"gpu"}`, 200},
		{"/v1/acl/identity/client-introduction-token", `{}`, 403},
	} {
		req, _ := http.NewRequest("PUT", env.srv.URL+tc.path, strings.NewReader(tc.body))
		req.Header.Set("X-Nomad-Token", "gpu")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if (resp.StatusCode == 403) != (tc.want == 403) {
			t.Errorf("PUT %s %s: %d %s", tc.path, tc.body, resp.StatusCode, b)
		}
	}
}

// A request naming an allocation, evaluation or deployment is judged in
// the object's namespace. On a client-only agent the lookup crosses the
// RPC port, which refuses a caller's token that cannot read the object
// (an alloc-exec-only token, or a token of another namespace), so the
// agent looks it up with its node's secret. A lookup that fails refuses
// the request: falling back to the request's namespace let a token with
// write in default read the logs and files of, exec into, restart and
// signal allocations of every other namespace through a client agent.
func TestACLObjectNamespaceLookedUpWithTheAgentsAuthority(t *testing.T) {
	env := newEnv(t, nil)
	z := &ACLAuthorizer{Resolver: matrixResolver{
		"write-default": compileRules(t, `namespace "default" { policy = "write" }`),
		"exec-other":    compileRules(t, `namespace "other" { capabilities = ["alloc-exec", "alloc-node-exec", "read-logs", "read-fs", "alloc-lifecycle"] }`),
	}, RPC: env.rpc}
	// The allocation runs on this agent's client.
	env.srv.Config.Handler = NewHandler(Config{RPC: env.rpc, FS: env.fs, Agent: &fakeAgent{serverOK: true}, Auth: z,
		AllocOps: &fakeOps{}, Allocs: allocSet{"a1": true}})
	nodeSecret := "node-secret"
	denied := structs.NewErrCoded(http.StatusForbidden, "Permission denied")
	// As the RPC port answers: the object (in namespace "other") only to
	// the node's secret.
	lookup := func(token string) error {
		if token != nodeSecret {
			return denied
		}
		return nil
	}
	env.rpc.handlers["Alloc.GetAlloc"] = func(args, reply any) error {
		if err := lookup(args.(*structs.AllocSpecificRequest).AuthToken); err != nil {
			return err
		}
		reply.(*structs.SingleAllocResponse).Alloc = &structs.Allocation{ID: "a1", Namespace: "other"}
		return nil
	}
	env.rpc.handlers["Eval.GetEval"] = func(args, reply any) error {
		if err := lookup(args.(*structs.EvalSpecificRequest).AuthToken); err != nil {
			return err
		}
		reply.(*structs.SingleEvalResponse).Eval = &structs.Evaluation{ID: "e1", Namespace: "other"}
		return nil
	}
	env.rpc.handlers["Deployment.GetDeployment"] = func(args, reply any) error {
		if err := lookup(args.(*structs.DeploymentSpecificRequest).AuthToken); err != nil {
			return err
		}
		reply.(*structs.SingleDeploymentResponse).Deployment = &structs.Deployment{ID: "d1", Namespace: "other"}
		return nil
	}
	allocRoutes := []struct{ method, path string }{
		{"GET", "/v1/client/fs/logs/a1?task=web&type=stdout"},
		{"GET", "/v1/client/fs/cat/a1?path=alloc/logs/web.stdout.0"},
		{"GET", "/v1/client/fs/ls/a1"},
		{"GET", "/v1/client/allocation/a1/exec?task=web&command=%5B%22sh%22%5D"},
		{"PUT", "/v1/client/allocation/a1/restart"},
		{"PUT", "/v1/client/allocation/a1/signal"},
	}
	routes := append(allocRoutes, []struct{ method, path string }{
		{"GET", "/v1/client/allocation/a1/stats"},
		{"GET", "/v1/client/allocation/a1/checks"},
		{"GET", "/v1/allocation/a1"},
		{"GET", "/v1/evaluation/e1"},
		{"GET", "/v1/deployment/d1"},
	}...)
	status := func(token, method, path string) int {
		t.Helper()
		req, _ := http.NewRequest(method, env.srv.URL+path, strings.NewReader(`{}`))
		req.Header.Set("X-Nomad-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	withNS := func(path string) string {
		if strings.Contains(path, "?") {
			return path + "&namespace=default"
		}
		return path + "?namespace=default"
	}
	for _, mode := range []string{"lookup refused", "agent's authority"} {
		z.LookupToken = nil
		if mode == "agent's authority" {
			z.LookupToken = func() string { return nodeSecret }
		}
		// A token of default is refused the other namespace's objects
		// either way: the refused lookup no longer falls back to default.
		for _, c := range routes {
			for _, p := range []string{c.path, withNS(c.path)} {
				if got := status("write-default", c.method, p); got != http.StatusForbidden {
					t.Errorf("%s: %s %s with a default-only token: %d, want 403", mode, c.method, p, got)
				}
			}
		}
		// A token holding only the alloc capabilities in "other" (no
		// read-job: its own lookup would be refused) is allowed there
		// when the agent asks with its own authority.
		for _, c := range allocRoutes {
			got := status("exec-other", c.method, c.path)
			if mode == "agent's authority" && got == http.StatusForbidden {
				t.Errorf("%s: %s %s with alloc capabilities in the object's namespace: 403", mode, c.method, c.path)
			}
			if mode == "lookup refused" && got != http.StatusForbidden {
				t.Errorf("%s: %s %s: %d, want 403 (the namespace is unknown)", mode, c.method, c.path, got)
			}
		}
	}
}
