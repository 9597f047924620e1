package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

func TestJobHistoryWithDiffs(t *testing.T) {
	v0, v1 := sampleJob(), sampleJob()
	v1.Version, v1.Stable = ptr(uint64(1)), ptr(true)
	v1.SubmitTime = ptr(t0.UnixNano())
	v0.VersionTag = &api.JobVersionTag{Name: "first", Description: "the original"}
	f := &fake{routes: map[string]any{
		"GET /v1/job/example": v1,
		"GET /v1/job/example/versions": api.JobVersionsResponse{Versions: []*api.Job{v1, v0}, Diffs: []*api.JobDiff{{
			Type: "Edited", ID: "example",
			Fields: []*api.FieldDiff{{Type: "Edited", Name: "Priority", Old: "50", New: "70"}},
			TaskGroups: []*api.TaskGroupDiff{{Type: "Edited", Name: "cache",
				Fields: []*api.FieldDiff{{Type: "Edited", Name: "Count", Old: "1", New: "3"}},
				Tasks: []*api.TaskDiff{{Type: "Edited", Name: "redis", Objects: []*api.ObjectDiff{{Type: "Edited", Name: "Config",
					Fields: []*api.FieldDiff{{Type: "Edited", Name: "image", Old: "redis:6", New: "redis:7"}}}}}},
			}},
		}}},
	}}
	out, errb, code := run(t, f.server(t), "job", "history", "-p", "example")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "job_history_p.txt", out)
	if !strings.Contains(f.seen[len(f.seen)-1], "diffs=true") {
		t.Fatalf("history -p did not ask for diffs: %v", f.seen)
	}
	out, _, code = run(t, f.server(t), "job", "history", "-version", "0", "example")
	if code != 0 || !strings.HasPrefix(out, "Version         = 0\n") || !strings.Contains(out, "Tag Name        = first") || strings.Contains(out, "Diff") {
		t.Fatalf("history -version 0 (%d):\n%s", code, out)
	}
}

func TestEvalListAndStatus(t *testing.T) {
	failed := &api.Evaluation{ID: evalID, Priority: 50, TriggeredBy: "job-register", JobID: "example", Namespace: "default",
		Status: "complete", Type: "service", CreateIndex: 9, BlockedEval: "0f0e0d0c-0000-4000-8000-000000000009",
		CreateTime: t0.Add(-2 * time.Minute).UnixNano(), ModifyTime: t0.Add(-time.Minute).UnixNano(),
		FailedTGAllocs: map[string]*api.AllocationMetric{"cache": {NodesEvaluated: 1, NodesExhausted: 1, CoalescedFailures: 2,
			DimensionExhausted: map[string]int{"memory": 1}}}}
	ok := &api.Evaluation{ID: "1a2b3c4d-0000-4000-8000-000000000010", Priority: 50, TriggeredBy: "node-update", JobID: "example",
		Namespace: "default", NodeID: nodeID, Status: "complete", Type: "service", CreateIndex: 12}
	f := &fake{routes: map[string]any{
		"GET /v1/evaluations":          []*api.Evaluation{failed, ok},
		"GET /v1/evaluation/" + evalID: failed,
	}}
	out, errb, code := run(t, f.server(t), "eval", "list")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "eval_list.txt", out)
	out, errb, code = run(t, f.server(t), "eval", "status", evalID)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "eval_status.txt", out)
}

func TestAgentInfo(t *testing.T) {
	f := &fake{routes: map[string]any{
		"GET /v1/agent/self": api.AgentSelf{Stats: map[string]map[string]string{
			"nomad":  {"leader": "true", "server": "true", "known_regions": "1"},
			"client": {"node_id": nodeID},
		}},
	}}
	out, errb, code := run(t, f.server(t), "agent-info")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "agent_info.txt", out)
}
