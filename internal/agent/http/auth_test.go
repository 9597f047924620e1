package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// authRoutes is one request per route of the route table.
var authRoutes = []struct{ method, path, body string }{
	{"GET", "/v1/jobs", ""},
	{"PUT", "/v1/jobs", `{"Job":{"ID":"web"}}`},
	{"PUT", "/v1/jobs/parse", `{"JobHCL":"job \"x\" {}"}`},
	{"PUT", "/v1/validate/job", `{"Job":{"ID":"web"}}`},
	{"GET", "/v1/job/web", ""},
	{"POST", "/v1/job/web", `{"Job":{"ID":"web"}}`},
	{"DELETE", "/v1/job/web", ""},
	{"GET", "/v1/job/web/allocations", ""},
	{"GET", "/v1/job/web/evaluations", ""},
	{"GET", "/v1/job/web/deployments", ""},
	{"GET", "/v1/job/web/deployment", ""},
	{"GET", "/v1/job/web/summary", ""},
	{"GET", "/v1/job/web/versions", ""},
	{"PUT", "/v1/job/web/plan", `{"Job":{"ID":"web"}}`},
	{"PUT", "/v1/job/web/evaluate", ""},
	{"PUT", "/v1/job/web/restart", `{"BatchSize":1}`},
	{"GET", "/v1/job/web/restart", ""},
	{"DELETE", "/v1/job/web/restart", ""},
	{"PUT", "/v1/job/web/restart/resume", ""},
	{"GET", "/v1/allocations", ""},
	{"GET", "/v1/allocation/a1", ""},
	{"PUT", "/v1/allocation/a1/stop", ""},
	{"GET", "/v1/evaluations", ""},
	{"DELETE", "/v1/evaluations", `{"EvalIDs":["e1"]}`},
	{"GET", "/v1/evaluation/e1", ""},
	{"GET", "/v1/evaluation/e1/allocations", ""},
	{"GET", "/v1/nodes", ""},
	{"PUT", "/v1/search", `{"Prefix":"we","Context":"jobs"}`},
	{"PUT", "/v1/search/fuzzy", `{"Text":"web","Context":"jobs"}`},
	{"GET", "/v1/node/n1", ""},
	{"GET", "/v1/node/n1/allocations", ""},
	{"PUT", "/v1/node/n1/eligibility", `{"Eligibility":"eligible"}`},
	{"PUT", "/v1/node/n1/drain", `{"DrainSpec":{"Deadline":1000000000}}`},
	{"GET", "/v1/deployments", ""},
	{"GET", "/v1/deployment/d1", ""},
	{"GET", "/v1/deployment/allocations/d1", ""},
	{"PUT", "/v1/deployment/fail/d1", ""},
	{"PUT", "/v1/deployment/pause/d1", `{"Pause":true}`},
	{"PUT", "/v1/deployment/promote/d1", `{"All":true}`},
	{"PUT", "/v1/deployment/allocation-health/d1", `{"HealthyAllocationIDs":["a1"]}`},
	{"PUT", "/v1/deployment/unblock/d1", ""},
	{"PUT", "/v1/job/web/promote", `{"All":true}`},
	{"PUT", "/v1/job/web/periodic/force", ""},
	{"PUT", "/v1/job/web/dispatch", `{"Meta":{"k":"v"}}`},
	{"PUT", "/v1/job/web/dispatch/payload?meta.k=v", "raw bytes"},
	{"GET", "/v1/status/leader", ""},
	{"GET", "/v1/status/peers", ""},
	{"GET", "/v1/regions", ""},
	{"GET", "/v1/scaling/policies", ""},
	{"GET", "/v1/scaling/policy/p1", ""},
	{"GET", "/v1/services", ""},
	{"GET", "/v1/volumes?type=csi", ""},
	{"GET", "/v1/volume/csi/vol1", ""},
	{"PUT", "/v1/volume/csi/vol1", `{"Volumes":[{"ID":"vol1","PluginID":"ebs"}]}`},
	{"DELETE", "/v1/volume/csi/vol1?force=true", ""},
	{"GET", "/v1/volume/host/hv1", ""},
	{"DELETE", "/v1/volume/host/hv1", ""},
	{"GET", "/v1/plugins?type=csi", ""},
	{"GET", "/v1/plugin/csi/ebs", ""},
	{"GET", "/v1/service/api", ""},
	{"DELETE", "/v1/service/api/_nomad-task-a1-web-api-http", ""},
	{"GET", "/v1/job/web/services", ""},
	{"GET", "/v1/allocation/a1/services", ""},
	{"GET", "/v1/namespaces", ""},
	{"GET", "/v1/namespace/default", ""},
	{"PUT", "/v1/namespace", `{"Name":"team-a"}`},
	{"PUT", "/v1/namespace/team-a", `{"Name":"team-a"}`},
	{"DELETE", "/v1/namespace/team-a", ""},
	{"GET", "/v1/node/pools", ""},
	{"PUT", "/v1/node/pools", `{"Name":"gpu"}`},
	{"GET", "/v1/node/pool/gpu", ""},
	{"PUT", "/v1/node/pool/gpu", `{"Name":"gpu"}`},
	{"DELETE", "/v1/node/pool/gpu", ""},
	{"GET", "/v1/node/pool/gpu/nodes", ""},
	{"GET", "/v1/node/pool/gpu/jobs", ""},
	{"GET", "/v1/agent/self", ""},
	{"GET", "/v1/agent/members", ""},
	{"PUT", "/v1/agent/join?address=127.0.0.1:4648", ""},
	{"PUT", "/v1/agent/force-leave?node=s1.global", ""},
	{"GET", "/v1/agent/servers", ""},
	{"PUT", "/v1/agent/servers?address=127.0.0.1:4647", ""},
	{"GET", "/v1/agent/keyring/list", ""},
	{"PUT", "/v1/agent/keyring/install", `{"Key":"RBTrg168gzlMARUXmpQLlELHIyjFNMtPgyTwlq5LrBU="}`},
	{"GET", "/v1/agent/health", ""},
	{"GET", "/v1/metrics", ""},
	{"GET", "/.well-known/jwks.json", ""},
	{"GET", "/.well-known/openid-configuration", ""},
	{"GET", "/v1/vars", ""},
	{"PUT", "/v1/var/app/db", `{"Items":{"k":"v"}}`},
	{"GET", "/v1/operator/keyring/keys", ""},
	{"PUT", "/v1/operator/keyring/rotate", ""},
	{"DELETE", "/v1/operator/keyring/key/k1", ""},
	{"GET", "/v1/client/stats?node_id=n1", ""},
	{"GET", "/v1/client/metadata?node_id=n1", ""},
	{"POST", "/v1/client/metadata", `{"Meta":{"k":"v"}}`},
	{"GET", "/v1/client/identity", ""},
	{"POST", "/v1/client/identity/renew", `{"NodeID":""}`},
	{"GET", "/v1/operator/raft/configuration", ""},
	{"PUT", "/v1/node/n1/purge", ""},
	{"GET", "/v1/agent/monitor", ""},
	{"GET", "/v1/agent/schedulers", ""},
	{"PUT", "/v1/agent/schedulers/config", `{"num_schedulers":1,"enabled_schedulers":["service"]}`},
	{"DELETE", "/v1/operator/raft/peer?id=p1", ""},
	{"PUT", "/v1/operator/raft/transfer-leadership?id=p1", ""},
	{"GET", "/v1/operator/snapshot", ""},
	{"PUT", "/v1/operator/snapshot", "not-an-archive"},
	{"GET", "/v1/operator/scheduler/configuration", ""},
	{"PUT", "/v1/operator/scheduler/configuration?cas=3", `{"SchedulerAlgorithm":"spread"}`},
	{"GET", "/v1/operator/autopilot/configuration", ""},
	{"PUT", "/v1/operator/autopilot/configuration?cas=3", `{"CleanupDeadServers":true,"LastContactThreshold":"200ms"}`},
	{"GET", "/v1/operator/autopilot/health", ""},
	{"GET", "/v1/client/fs/ls/a1", ""},
	{"GET", "/v1/client/fs/stat/a1?path=x", ""},
	{"GET", "/v1/client/fs/cat/a1?path=x", ""},
	{"GET", "/v1/client/fs/readat/a1?path=x&offset=0&limit=1", ""},
	{"GET", "/v1/client/fs/stream/a1?path=x&follow=false", ""},
	{"GET", "/v1/client/fs/logs/a1?task=web&type=stdout", ""},
	{"GET", "/v1/client/allocation/a1/exec?task=web&command=%5B%22sh%22%5D", ""},
	{"GET", "/v1/client/allocation/a1/stats", ""},
	{"GET", "/v1/event/stream?topic=Job:web", ""},
	{"GET", "/v1/event/stream?topic=Service:api", ""}, // Nomad: namespace read-job
	{"GET", "/v1/evaluations/count", ""},
	{"PUT", "/v1/system/gc", ""},
	{"PUT", "/v1/system/reconcile/summaries", ""},
	{"PUT", "/v1/client/gc?node_id=n1", ""},
	{"PUT", "/v1/client/allocation/a1/gc", ""},
	{"GET", "/v1/client/gc?node_id=n1", ""},
	{"GET", "/v1/client/allocation/a1/gc", ""},
	{"PUT", "/v1/client/allocation/a1/restart", `{"TaskName":"web"}`},
	{"PUT", "/v1/client/allocation/a1/signal", `{"Task":"web","Signal":"SIGUSR1"}`},
	{"GET", "/v1/client/allocation/a1/checks", ""},
	{"GET", "/v1/allocation/a1/checks", ""},
	{"PUT", "/v1/acl/bootstrap", ""},
	{"GET", "/v1/acl/policies", ""},
	{"GET", "/v1/acl/policy/p1", ""},
	{"PUT", "/v1/acl/policy/p1", `{"Name":"p1","Rules":"node { policy = \"read\" }"}`},
	{"DELETE", "/v1/acl/policy/p1", ""},
	{"GET", "/v1/acl/tokens", ""},
	{"PUT", "/v1/acl/token", `{"Type":"management"}`},
	{"GET", "/v1/acl/token/self", ""},
	{"GET", "/v1/acl/token/t1", ""},
	{"PUT", "/v1/acl/token/t1", `{"Type":"management"}`},
	{"DELETE", "/v1/acl/token/t1", ""},
	{"PUT", "/v1/acl/token/onetime", ""},
	{"PUT", "/v1/acl/token/onetime/exchange", `{"OneTimeSecretID":"x"}`},
	{"GET", "/v1/acl/roles", ""},
	{"PUT", "/v1/acl/role", `{"Name":"r1","Policies":[{"Name":"p1"}]}`},
	{"GET", "/v1/acl/role/r1", ""},
	{"PUT", "/v1/acl/role/r1", `{"Name":"r1","Policies":[{"Name":"p1"}]}`},
	{"DELETE", "/v1/acl/role/r1", ""},
	{"GET", "/v1/acl/role/name/r1", ""},
	{"GET", "/v1/acl/auth-methods", ""},
	{"PUT", "/v1/acl/auth-method", `{"Name":"m1","Type":"JWT"}`},
	{"GET", "/v1/acl/auth-method/m1", ""},
	{"PUT", "/v1/acl/auth-method/m1", `{"Name":"m1","Type":"JWT"}`},
	{"DELETE", "/v1/acl/auth-method/m1", ""},
	{"GET", "/v1/acl/binding-rules", ""},
	{"PUT", "/v1/acl/binding-rule", `{"AuthMethod":"m1","BindType":"management"}`},
	{"GET", "/v1/acl/binding-rule/b1", ""},
	{"PUT", "/v1/acl/binding-rule/b1", `{"AuthMethod":"m1","BindType":"management"}`},
	{"DELETE", "/v1/acl/binding-rule/b1", ""},
	{"PUT", "/v1/acl/login", `{"AuthMethodName":"m1","LoginToken":"x"}`},
	{"GET", "/v1/agent/pprof/heap", ""},
	{"PUT", "/v1/acl/oidc/auth-url", `{"AuthMethodName":"m1","RedirectURI":"http://x","ClientNonce":"n"}`},
	{"PUT", "/v1/acl/oidc/complete-auth", `{"AuthMethodName":"m1","ClientNonce":"n","State":"s","Code":"c"}`},
	{"PUT", "/v1/acl/identity/client-introduction-token", `{"NodePool":"default"}`},
}

func TestAuthorizerSeesEveryRoute(t *testing.T) {
	env := newEnv(t, nil)
	// Every pattern in the route table is covered by the table above.
	for _, rt := range (&server{}).routes() {
		covered := false
		for _, ar := range authRoutes {
			p := strings.SplitN(ar.path, "?", 2)[0]
			if p == rt.pattern || (strings.HasSuffix(rt.pattern, "/") && strings.HasPrefix(p, rt.pattern)) {
				covered = true
			}
		}
		if !covered {
			t.Errorf("route %s has no authorization case", rt.pattern)
		}
	}

	for _, ar := range authRoutes {
		t.Run(ar.method+" "+ar.path, func(t *testing.T) {
			req, _ := http.NewRequest(ar.method, env.srv.URL+ar.path, strings.NewReader(ar.body))
			req.Header.Set("X-Nomad-Token", "good")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			env.auth.mu.Lock()
			seen, tok := env.auth.seen[len(env.auth.seen)-1], env.auth.token[len(env.auth.token)-1]
			env.auth.mu.Unlock()
			if want := ar.method + " " + strings.SplitN(ar.path, "?", 2)[0]; seen != want || tok != "good" {
				t.Fatalf("authorizer saw %q token %q, want %q", seen, tok, want)
			}

			// A denied token never reaches the handler.
			env.rpc.mu.Lock()
			before := len(env.rpc.calls)
			env.rpc.mu.Unlock()
			env.auth.deny = "bad"
			defer func() { env.auth.deny = "" }()
			req, _ = http.NewRequest(ar.method, env.srv.URL+ar.path, strings.NewReader(ar.body))
			req.Header.Set("Authorization", "Bearer bad")
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("denied request answered %d", resp.StatusCode)
			}
			env.rpc.mu.Lock()
			after := len(env.rpc.calls)
			env.rpc.mu.Unlock()
			if after != before {
				t.Fatal("denied request reached the server")
			}
		})
	}
}
