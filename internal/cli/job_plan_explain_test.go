package cli

import (
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
)

func explainResponse() any {
	return struct {
		*api.JobPlanResponse
		Explain *planExplain
	}{planResponse(1), &planExplain{TaskGroups: map[string]*tgExplain{
		"g": {
			NodesEvaluated: 30, NodesScored: 25,
			Filtered:  map[string]int{"${attr.kernel.name} = linux": 3, "missing drivers": 1, "node not ready": 1},
			Exhausted: map[string]int{"memory": 2, "network: reserved port collision http=8080": 1},
			Nodes: []*nodeExplain{
				{NodeID: "2b5c0000-0000-4000-8000-000000000002", NodeName: "worker-2",
					Scores: map[string]float64{"binpack": 0.41, "job-anti-affinity": -0.5}, Final: -0.045, Placed: 0},
				{NodeID: "1a4b0000-0000-4000-8000-000000000001", NodeName: "worker-1",
					Scores: map[string]float64{"binpack": 0.6273}, Final: 0.6273, Placed: 2},
				{NodeID: "3c6d0000-0000-4000-8000-000000000003", NodeName: "worker-3",
					Scores: map[string]float64{"binpack": 0.38, "node-reschedule-penalty": -1}, Final: -0.31, Placed: 0},
			},
		},
		"db": {NodesEvaluated: 4, Filtered: map[string]int{"${meta.rack} = r9": 4}},
	}}}
}

func TestJobPlanExplainGolden(t *testing.T) {
	f := &fake{routes: map[string]any{"PUT /v1/job/hello/plan": explainResponse()}}
	out, errb, code := run(t, f.server(t), "job", "plan", "-explain", minimal)
	if code != 1 {
		t.Fatalf("code %d, want 1 (allocations created): %s", code, errb)
	}
	golden(t, "job_plan_explain.txt", strings.ReplaceAll(out, minimal, "hello.hcl"))
}

func TestJobPlanExplainVerboseShowsFullIDs(t *testing.T) {
	f := &fake{routes: map[string]any{"PUT /v1/job/hello/plan": explainResponse()}}
	out, _, _ := run(t, f.server(t), "job", "plan", "-explain", "-verbose", minimal)
	if !strings.Contains(out, "1a4b0000-0000-4000-8000-000000000001  worker-1") {
		t.Fatalf("verbose output lacks full node IDs:\n%s", out)
	}
	plain, _, _ := run(t, f.server(t), "job", "plan", minimal)
	if strings.Contains(plain, "Placement explain") {
		t.Fatalf("explain printed without -explain:\n%s", plain)
	}
}
