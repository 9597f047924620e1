package httpapi

import (
	"strings"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// The common query parameters of every read (blocking queries, stale
// reads, pages): garbage is a 400 naming the parameter, and what is
// accepted reaches the RPC bounded (an enormous wait is the longest one).
func TestQueryParamsHostile(t *testing.T) {
	env := newEnv(t, nil)
	for _, c := range []struct {
		query string
		want  string
	}{
		{"index=-1", `Invalid index "-1"`},
		{"index=abc", `Invalid index "abc"`},
		{"index=18446744073709551616", `Invalid index "18446744073709551616"`},
		{"index=1e3", `Invalid index "1e3"`},
		{"wait=abc", `Invalid wait time "abc"`},
		{"wait=-5s", `Invalid wait time "-5s"`},
		{"wait=1", `Invalid wait time "1"`},
		{"wait=9999999999999999h", `Invalid wait time`},
		{"stale=maybe", `"stale"`},
		{"stale=2", `"stale"`},
		{"per_page=-1", `Invalid per_page "-1"`},
		{"per_page=99999999999", `Invalid per_page`},
		{"reverse=maybe", `"reverse"`},
	} {
		code, _, body := env.raw(t, "GET", "/v1/jobs?"+c.query, "")
		if code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("GET /v1/jobs?%s: %d %q, want 400 %q", c.query, code, body, c.want)
		}
	}
	for _, c := range []struct {
		query string
		check func(q structs.QueryOptions) bool
	}{
		{"index=18446744073709551615&wait=100000h", func(q structs.QueryOptions) bool {
			return q.MinQueryIndex == 1<<64-1 && q.MaxQueryTime == maxQueryTime
		}},
		{"stale", func(q structs.QueryOptions) bool { return q.AllowStale }},
		{"stale=", func(q structs.QueryOptions) bool { return q.AllowStale }},
		{"stale=true", func(q structs.QueryOptions) bool { return q.AllowStale }},
		{"stale=false", func(q structs.QueryOptions) bool { return !q.AllowStale }},
		{"wait=0s", func(q structs.QueryOptions) bool { return q.MaxQueryTime == 0 }},
	} {
		code, _, body := env.raw(t, "GET", "/v1/jobs?"+c.query, "")
		if code != 200 {
			t.Errorf("GET /v1/jobs?%s: %d %q, want 200", c.query, code, body)
			continue
		}
		if q := env.rpc.last(t, "Job.List").(*structs.JobListRequest).QueryOptions; !c.check(q) {
			t.Errorf("GET /v1/jobs?%s reached the RPC as %+v", c.query, q)
		}
	}
}

// A JSON null body on the write routes whose api types unmarshal
// themselves (tokens, auth methods, node pools, autopilot) is a 400, not a
// panic that drops the connection; nested nulls and garbage too.
func TestNullBodiesHostile(t *testing.T) {
	env := newEnv(t, nil)
	for _, path := range []string{"/v1/acl/token", "/v1/acl/token/x", "/v1/acl/auth-method", "/v1/acl/auth-method/x",
		"/v1/node/pools", "/v1/node/pool/x", "/v1/operator/autopilot/configuration", "/v1/namespace", "/v1/acl/policy/x",
		"/v1/acl/role", "/v1/acl/binding-rule", "/v1/acl/login", "/v1/acl/oidc/auth-url", "/v1/acl/oidc/complete-auth"} {
		for _, body := range []string{"null", " null\n", "[null]", "nul", `"x"`, "1"} {
			code, _, got := env.raw(t, "PUT", path, body)
			if code != 400 {
				t.Errorf("PUT %s %q: %d %q, want 400", path, body, code, got)
			}
		}
	}
}

// A job body with a null element in a list or map of objects (a task
// group, task, service, network, constraint, volume) is a 400 naming it
// on register, plan and validate; it panicked in the api's Canonicalize
// and dropped the connection.
func TestJobNullElementsHostile(t *testing.T) {
	env := newEnv(t, nil)
	for _, c := range []struct{ job, want string }{
		{`{"ID":"x","TaskGroups":[null]}`, "Job.TaskGroups[0] is null"},
		{`{"ID":"x","TaskGroups":[{"Name":"g","Tasks":[null]}]}`, "Job.TaskGroups[0].Tasks[0] is null"},
		{`{"ID":"x","Constraints":[null]}`, "Job.Constraints[0] is null"},
		{`{"ID":"x","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"raw_exec","Services":[null]}]}]}`, "Job.TaskGroups[0].Tasks[0].Services[0] is null"},
		{`{"ID":"x","TaskGroups":[{"Name":"g","Networks":[null]}]}`, "Job.TaskGroups[0].Networks[0] is null"},
		{`{"ID":"x","TaskGroups":[{"Name":"g","Volumes":{"v":null}}]}`, "Job.TaskGroups[0].Volumes[v] is null"},
	} {
		for _, path := range []string{"/v1/jobs", "/v1/job/x", "/v1/job/x/plan", "/v1/validate/job"} {
			code, _, got := env.raw(t, "PUT", path, `{"Job":`+c.job+`}`)
			if code != 400 || !strings.Contains(got, c.want) {
				t.Errorf("PUT %s %s: %d %q, want 400 %q", path, c.job, code, got, c.want)
			}
		}
	}
}
