package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

const (
	policyH = "2f7c1b7e-0000-4000-8000-00000000000a"
	policyV = "0a9d3c2f-0000-4000-8000-00000000000b"
)

func scalingFake() *fake {
	return &fake{routes: map[string]any{
		"GET /v1/scaling/policies": []*api.ScalingPolicyListStub{
			{ID: policyV, Enabled: true, Type: "vertical_cpu", Target: map[string]string{"Namespace": "default", "Job": "example", "Group": "cache", "Task": "redis"}},
			{ID: policyH, Enabled: false, Type: "horizontal", Target: map[string]string{"Namespace": "default", "Job": "example", "Group": "cache"}},
		},
		"GET /v1/scaling/policy/" + policyH: &api.ScalingPolicy{ID: policyH, Namespace: "default", Type: "horizontal",
			Enabled: ptr(false), Min: ptr(int64(1)), Max: ptr(int64(10)),
			Target: map[string]string{"Namespace": "default", "Job": "example", "Group": "cache"},
			Policy: map[string]any{"cooldown": "1m", "check": map[string]any{"cpu": map[string]any{"source": "nomad-apm"}}}},
	}}
}

func TestScalingPolicyList(t *testing.T) {
	f := scalingFake()
	srv := f.server(t)
	out, errb, code := run(t, srv, "scaling", "policy", "list", "-job", "example", "-type", "vertical")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "scaling_policy_list.txt", out)
	if last := f.seen[len(f.seen)-1]; !strings.Contains(last, "job=example") || !strings.Contains(last, "type=vertical") {
		t.Fatalf("filters not sent: %s", last)
	}
	out, _, code = run(t, srv, "scaling", "policy", "list", "-json")
	if code != 0 || !strings.Contains(out, `"Type": "vertical_cpu"`) {
		t.Fatalf("-json: code %d\n%s", code, out)
	}
	empty := (&fake{routes: map[string]any{"GET /v1/scaling/policies": []*api.ScalingPolicyListStub{}}}).server(t)
	if out, _, _ := run(t, empty, "scaling", "policy", "list"); out != "No policies found\n" {
		t.Fatalf("empty list: %q", out)
	}
}

func TestScalingPolicyInfo(t *testing.T) {
	srv := scalingFake().server(t)
	out, errb, code := run(t, srv, "scaling", "policy", "info", policyH)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "scaling_policy_info.txt", out)
	// A unique prefix is enough; an unknown one is a clear error.
	if out2, errb, code := run(t, srv, "scaling", "policy", "info", "2f7c"); code != 0 || out2 != out {
		t.Fatalf("prefix: code %d %s\n%s", code, errb, out2)
	}
	if _, errb, code := run(t, srv, "scaling", "policy", "info", "ffff"); code != 1 || !strings.Contains(errb, `No scaling policy with prefix or ID "ffff" found`) {
		t.Fatalf("unknown: code %d %s", code, errb)
	}
}

func TestJobScalingEvents(t *testing.T) {
	at := func(min int) uint64 { return uint64(t0.Add(-time.Duration(min) * time.Minute).UnixNano()) }
	f := &fake{routes: map[string]any{
		"GET /v1/job/example": sampleJob(),
		"GET /v1/job/example/scale": &api.JobScaleStatusResponse{JobID: "example", Namespace: "default",
			TaskGroups: map[string]api.TaskGroupScaleStatus{
				"cache": {Desired: 3, Events: []api.ScalingEvent{
					{PreviousCount: 3, Error: true, Message: "autoscaler: query failed", Time: at(1)},
					{Count: ptr(int64(3)), PreviousCount: 1, Message: "submitted using the drover CLI", EvalID: ptr(evalID), Time: at(5)},
				}},
				"api": {Desired: 1, Events: []api.ScalingEvent{}},
			}},
	}}
	srv := f.server(t)
	out, errb, code := run(t, srv, "job", "scaling-events", "example")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "job_scaling_events.txt", out)
	out, errb, code = run(t, srv, "job", "scaling-events", "-verbose", "example")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "job_scaling_events_verbose.txt", out)
}
