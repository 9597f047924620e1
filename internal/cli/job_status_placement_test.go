package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"
)

const blockedID = "0f0e0d0c-0000-4000-8000-000000000009"

// cacheFailure is why group "cache" could not place two allocations: one
// node filtered out by class and constraint, the other out of memory.
func cacheFailure() *api.AllocationMetric {
	return &api.AllocationMetric{
		NodesEvaluated: 2, NodesFiltered: 1, NodesExhausted: 1, CoalescedFailures: 1,
		NodePool: "default", NodesInPool: 2,
		NodesAvailable:     map[string]int{"dc1": 2},
		ClassFiltered:      map[string]int{"small": 1},
		ConstraintFiltered: map[string]int{"${attr.kernel.name} = windows": 1},
		DimensionExhausted: map[string]int{"memory": 1},
	}
}

// placementFailureEvals are a job's evaluations, oldest last as the API
// does not promise: a node update, the registration that failed to place
// and the blocked evaluation still waiting for capacity.
func placementFailureEvals() []*api.Evaluation {
	failed := map[string]*api.AllocationMetric{
		"cache": cacheFailure(),
		"web":   {NodePool: "gpu", NodesAvailable: map[string]int{"dc2": 0}},
	}
	return []*api.Evaluation{
		{ID: "1a2b3c4d-0000-4000-8000-000000000010", Priority: 50, TriggeredBy: "node-update", Status: "complete", CreateIndex: 2},
		{ID: blockedID, Priority: 50, TriggeredBy: "queued-allocs", Status: "blocked", Type: "service", JobID: "example",
			Namespace: "default", CreateIndex: 6, PreviousEval: evalID, FailedTGAllocs: failed,
			StatusDescription: "created to place remaining allocations",
			CreateTime:        t0.Add(-2 * time.Minute).UnixNano(), ModifyTime: t0.Add(-time.Minute).UnixNano()},
		{ID: evalID, Priority: 50, TriggeredBy: "job-register", Status: "complete", CreateIndex: 5,
			BlockedEval: blockedID, FailedTGAllocs: failed},
	}
}

func placementFailureFake() *fake {
	evals := placementFailureEvals()
	return &fake{routes: map[string]any{
		"GET /v1/job/example": sampleJob(),
		"GET /v1/job/example/summary": &api.JobSummary{JobID: "example", Summary: map[string]api.TaskGroupSummary{
			"cache": {Queued: 2, Running: 1}, "web": {Queued: 1},
		}},
		"GET /v1/job/example/evaluations": evals,
		"GET /v1/job/example/deployment":  deployment("running", "Deployment is running", 1, 1, 0),
		"GET /v1/job/example/allocations": []*api.AllocationListStub{{
			ID: allocID, NodeID: nodeID, TaskGroup: "cache", JobVersion: 0, DesiredStatus: "run", ClientStatus: "running",
			CreateTime: t0.Add(-5 * time.Minute).UnixNano(), ModifyTime: t0.Add(-90 * time.Second).UnixNano(),
		}},
		"GET /v1/evaluations":             []*api.Evaluation{evals[1]},
		"GET /v1/evaluation/" + blockedID: evals[1],
	}}
}

// A job whose allocations wait for capacity says why in job status, between
// the summary and the deployment, and with -evals lists its evaluations.
func TestJobStatusPlacementFailure(t *testing.T) {
	srv := placementFailureFake().server(t)
	out, errb, code := run(t, srv, "job", "status", "example")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	golden(t, "job_status_placement.txt", out)
	if strings.Contains(out, "\nEvaluations\n") {
		t.Errorf("evaluations listed without -evals:\n%s", out)
	}
	sum, pf, dep := strings.Index(out, "\nSummary\n"), strings.Index(out, "\nPlacement Failure\n"), strings.Index(out, "\nLatest Deployment\n")
	if !(sum >= 0 && sum < pf && pf < dep && dep < strings.Index(out, "\nAllocations\n")) {
		t.Errorf("sections out of order:\n%s", out)
	}

	out, errb, code = run(t, srv, "job", "status", "-evals", "example")
	if code != 0 {
		t.Fatalf("-evals: code %d: %s", code, errb)
	}
	golden(t, "job_status_evals.txt", out)
}

// eval status on the blocked evaluation prints the very block job status
// prints for it.
func TestEvalStatusBlockedSameBlockAsJobStatus(t *testing.T) {
	srv := placementFailureFake().server(t)
	status, _, code := run(t, srv, "job", "status", "example")
	if code != 0 {
		t.Fatal(status)
	}
	_, block, _ := strings.Cut(status, "\nPlacement Failure\n")
	block, _, _ = strings.Cut(block, "\n\n")
	if !strings.Contains(block, `Task Group "cache" (failed to place 2 allocations):`) {
		t.Fatalf("job status block:\n%s", block)
	}
	out, errb, code := run(t, srv, "eval", "status", "0f0e")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errb)
	}
	if !strings.Contains(out, "Status             = blocked\n") || !strings.HasSuffix(out, "\n==> Failed Placements\n"+block+"\n") {
		t.Fatalf("eval status of the blocked evaluation:\n%s\nwant its block:\n%s", out, block)
	}
}

// `status <prefix>` of the blocked evaluation is its eval status, failed
// placements included.
func TestStatusPrefixOfBlockedEvalShowsFailedPlacements(t *testing.T) {
	f := placementFailureFake()
	f.routes["PUT /v1/search"] = &api.SearchResponse{Matches: map[contexts.Context][]string{contexts.Evals: {blockedID}}}
	srv := f.server(t)
	want, _, _ := run(t, srv, "eval", "status", blockedID)
	out, errb, code := run(t, srv, "status", "0f0e")
	if code != 0 || out != want || !strings.Contains(out, "\n==> Failed Placements\nTask Group \"cache\"") {
		t.Fatalf("code %d: %s\n%s\nwant:\n%s", code, errb, out, want)
	}
}

// When job status shows placement failures: only while allocations still
// wait to be placed.
func TestJobStatusPlacementFailureOnlyWhileOutstanding(t *testing.T) {
	fail := map[string]*api.AllocationMetric{"cache": cacheFailure()}
	ev := func(id, status string, index uint64, failed map[string]*api.AllocationMetric) *api.Evaluation {
		return &api.Evaluation{ID: id, Status: status, CreateIndex: index, FailedTGAllocs: failed}
	}
	for _, c := range []struct {
		name  string
		evals []*api.Evaluation
		want  string // eval whose failures are shown, "" for none
	}{
		{"no evaluations", nil, ""},
		{"a null in the server's list is skipped",
			[]*api.Evaluation{nil, ev("blk", "blocked", 6, fail), nil}, "blk"},
		{"all placed", []*api.Evaluation{ev("a", "complete", 5, nil)}, ""},
		{"blocked, failures on the blocked eval",
			[]*api.Evaluation{ev("reg", "complete", 5, fail), ev("blk", "blocked", 6, fail)}, "blk"},
		{"blocked eval without metrics: the registration's",
			[]*api.Evaluation{ev("blk", "blocked", 6, nil), ev("reg", "complete", 5, fail)}, "reg"},
		{"unblocked and being retried",
			[]*api.Evaluation{ev("reg", "complete", 5, fail), ev("blk", "pending", 6, fail)}, "blk"},
		{"newest evaluation failed, no blocked eval (system job)",
			[]*api.Evaluation{ev("old", "complete", 3, nil), ev("reg", "complete", 5, fail)}, "reg"},
		{"blocked eval placed everything later",
			[]*api.Evaluation{ev("reg", "complete", 5, fail), ev("blk", "complete", 6, nil)}, ""},
		{"capacity came from a node update",
			[]*api.Evaluation{ev("reg", "complete", 5, fail), ev("node", "complete", 9, nil)}, ""},
		{"job stopped: blocked eval cancelled",
			[]*api.Evaluation{ev("reg", "complete", 5, fail), ev("blk", api.EvalStatusCancelled, 6, fail), ev("dereg", "complete", 8, nil)}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := jobEvalSections(c.evals, false, true)
			if c.want == "" {
				if got != "" {
					t.Fatalf("shown:\n%s", got)
				}
				return
			}
			want := "\n\nPlacement Failure\n" + placementFailureBlock(fail)
			if got != want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, want)
			}
			if e := outstandingPlacementFailure(newestFirst(c.evals)); e == nil || e.ID != c.want {
				t.Fatalf("shown eval %+v, want %s", e, c.want)
			}
		})
	}
}

// Many failing groups: job status explains five and names the command
// that shows the rest.
func TestJobStatusPlacementFailureTruncated(t *testing.T) {
	failed := map[string]*api.AllocationMetric{}
	for i := range 7 {
		failed[fmt.Sprintf("g%d", i)] = &api.AllocationMetric{NodesEvaluated: 1, NodesExhausted: 1}
	}
	got := jobEvalSections([]*api.Evaluation{{ID: blockedID, Status: "blocked", FailedTGAllocs: failed}}, false, false)
	for i := range 7 {
		if shown := strings.Contains(got, fmt.Sprintf(`Task Group "g%d"`, i)); shown != (i < 5) {
			t.Errorf("g%d shown=%v:\n%s", i, shown, got)
		}
	}
	if !strings.HasSuffix(got, "\n\n2 more task groups failed to place; to see them all run:\ndrover eval status 0f0e0d0c") {
		t.Errorf("no pointer to the rest:\n%s", got)
	}
}

// A server naming a failed group without its metrics (JSON null) still
// gets the group and count printed, not a crash.
func TestPlacementFailureNullMetric(t *testing.T) {
	e := &api.Evaluation{ID: blockedID, Status: "blocked", JobID: "example", Type: "service",
		FailedTGAllocs: map[string]*api.AllocationMetric{"cache": nil}}
	f := &fake{routes: map[string]any{"GET /v1/evaluation/" + blockedID: e, "GET /v1/evaluations": []*api.Evaluation{e}}}
	out, errb, code := run(t, f.server(t), "eval", "status", blockedID)
	if code != 0 || !strings.HasSuffix(out, "==> Failed Placements\nTask Group \"cache\" (failed to place 1 allocation):\n") {
		t.Fatalf("code %d: %s\n%s", code, errb, out)
	}
}

// A group whose node pool has no node (ready, in the job's datacenters)
// says so, naming the pool; a metric without a pool (an older server) or
// with nodes in it does not.
func TestPlacementFailureNamesEmptyNodePool(t *testing.T) {
	const line = `No nodes are available in node pool "gpu"`
	for _, tc := range []struct {
		m    *api.AllocationMetric
		want bool
	}{
		{&api.AllocationMetric{NodePool: "gpu"}, true},
		{&api.AllocationMetric{NodePool: "gpu", NodesInPool: 3, NodesEvaluated: 3, NodesExhausted: 3}, false},
		{&api.AllocationMetric{}, false},
	} {
		got := strings.Join(formatAllocMetric(tc.m), "\n")
		if strings.Contains(got, line) != tc.want {
			t.Errorf("%+v:\n%s\nwant the pool line: %v", tc.m, got, tc.want)
		}
	}
}
