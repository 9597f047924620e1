package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

func TestScalingPoliciesList(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Scaling.ListPolicies", structs.ScalingPolicyListResponse{
		Policies:  []*structs.ScalingPolicyListStub{{ID: "p1", Enabled: true, Type: "horizontal", Target: map[string]string{"Job": "web"}}},
		QueryMeta: structs.QueryMeta{Index: 12},
	})
	q := &api.QueryOptions{Namespace: "prod", Params: map[string]string{"job": "web", "type": "vertical"}}
	ps, qm, err := env.client.Scaling().ListPolicies(q)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].ID != "p1" || ps[0].Target["Job"] != "web" || qm.LastIndex != 12 {
		t.Fatalf("list: %+v %+v", ps, qm)
	}
	args := env.rpc.last(t, "Scaling.ListPolicies").(*structs.ScalingPolicyListRequest)
	if args.Job != "web" || args.Type != "vertical" || args.Namespace != "prod" {
		t.Fatalf("filters not passed: %+v", args)
	}
	// No policies is [], not null.
	env.rpc.reply("Scaling.ListPolicies", structs.ScalingPolicyListResponse{})
	if code, _, body := env.raw(t, "GET", "/v1/scaling/policies", ""); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("empty list: %d %q", code, body)
	}
	if code, _, _ := env.raw(t, "PUT", "/v1/scaling/policies", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("PUT: %d", code)
	}
}

func TestScalingPolicyGet(t *testing.T) {
	env := newEnv(t, nil)
	env.rpc.reply("Scaling.GetPolicy", structs.SingleScalingPolicyResponse{
		Policy:    &structs.ScalingPolicy{ID: "p1", Type: "horizontal", Max: new(int64(4)), Policy: map[string]any{"cooldown": "1m"}},
		QueryMeta: structs.QueryMeta{Index: 9},
	})
	p, _, err := env.client.Scaling().GetPolicy("p1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != "p1" || *p.Max != 4 || p.Policy["cooldown"] != "1m" {
		t.Fatalf("policy: %+v", p)
	}
	if args := env.rpc.last(t, "Scaling.GetPolicy").(*structs.ScalingPolicySpecificRequest); args.ID != "p1" {
		t.Fatalf("ID not passed: %+v", args)
	}
	// An unknown ID and an empty one are 404s, as in Nomad.
	env.rpc.reply("Scaling.GetPolicy", structs.SingleScalingPolicyResponse{})
	if code, _, body := env.raw(t, "GET", "/v1/scaling/policy/nope", ""); code != 404 || !strings.Contains(body, "scaling policy not found") {
		t.Fatalf("unknown: %d %q", code, body)
	}
	if code, _, _ := env.raw(t, "GET", "/v1/scaling/policy/", ""); code != 404 {
		t.Fatalf("empty ID: %d", code)
	}
	if code, _, _ := env.raw(t, "DELETE", "/v1/scaling/policy/p1", ""); code != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE: %d", code)
	}
}
