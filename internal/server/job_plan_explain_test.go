package server

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

func TestPlanExplainOnlyWhenAsked(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	testNode(t, s, 4000, 4096)
	job := testJob("web", 2)
	job.Constraints = []*structs.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}}

	var plain structs.JobPlanResponse
	if err := s.RPC("Job.Plan", &structs.JobPlanRequest{Job: job.Copy()}, &plain); err != nil {
		t.Fatal(err)
	}
	if plain.Explain != nil {
		t.Fatalf("explain returned without being asked: %+v", plain.Explain)
	}

	var resp structs.JobPlanResponse
	if err := s.RPC("Job.Plan", &structs.JobPlanRequest{Job: job.Copy(), Explain: true}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Explain == nil || resp.Explain.TaskGroups["web"] == nil {
		t.Fatalf("no explain for group web: %+v", resp.Explain)
	}
	g := resp.Explain.TaskGroups["web"]
	if g.NodesScored != 2 || len(g.Nodes) != 2 || g.Nodes[0].Scores["binpack"] == 0 || g.Nodes[0].NodeName == "" {
		t.Fatalf("explain rows = %+v", g.Nodes)
	}
	if g.Nodes[0].Placed+g.Nodes[1].Placed != 2 {
		t.Fatalf("placed over rows = %d, want 2", g.Nodes[0].Placed+g.Nodes[1].Placed)
	}
	if resp.Annotations.DesiredTGUpdates["web"].Place != 2 {
		t.Fatalf("annotations changed by explain: %+v", resp.Annotations.DesiredTGUpdates["web"])
	}
	if j, _ := s.State().JobByID(nil, "default", "web"); j != nil {
		t.Fatal("plan registered the job")
	}
}

// Three instances of one static port on one node: one runs, the summary
// says two are queued, and the blocked eval in state says why.
func TestStaticPortQueuedInSummaryAndBlockedEval(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	job := testJob("web", 3)
	job.TaskGroups[0].Networks = []*structs.NetworkResource{{Mode: "host",
		ReservedPorts: []structs.Port{{Label: "http", Value: 8080}}}}
	ev := evalDone(t, s, register(t, s, job).EvalID)
	if n := len(liveAllocs(t, s, "web")); n != 1 {
		t.Fatalf("placed %d, want 1", n)
	}
	waitFor(t, 5*time.Second, "summary queued=2", func() bool {
		sum, _ := s.State().JobSummaryByID(nil, "default", "web")
		return sum != nil && sum.Summary["web"].Queued == 2
	})
	b, _ := s.State().EvalByID(nil, ev.BlockedEval)
	if b == nil || b.Status != structs.EvalStatusBlocked {
		t.Fatalf("blocked eval = %+v", b)
	}
	if m := b.FailedTGAllocs["web"]; m == nil || m.DimensionExhausted["network: reserved port collision http=8080"] != 1 {
		t.Fatalf("blocked eval metrics = %+v", m)
	}
}
