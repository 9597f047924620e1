package server

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

func testSystemJob(id string) *structs.Job {
	job := testJob(id, 1)
	job.Type = structs.JobTypeSystem
	return job
}

// liveOnNode counts the job's live allocs per node.
func liveOnNode(t *testing.T, s *Server, jobID string) map[string]int {
	out := make(map[string]int)
	for _, a := range liveAllocs(t, s, jobID) {
		out[a.NodeID]++
	}
	return out
}

func TestSystemJobReachesNodesThatJoinLater(t *testing.T) {
	s := testServer(t, nil)
	n1 := testNode(t, s, 4000, 4096)

	resp := register(t, s, testSystemJob("sys"))
	if ev := evalDone(t, s, resp.EvalID); ev.Status != structs.EvalStatusComplete {
		t.Fatalf("eval %s: %s", ev.Status, ev.StatusDescription)
	}
	if got := liveOnNode(t, s, "sys"); len(got) != 1 || got[n1.ID] != 1 {
		t.Fatalf("allocs per node = %v, want one on %s", got, n1.ID)
	}

	// A node that registers and becomes ready afterwards gets its alloc
	// from the node-update eval, without touching the job.
	n2 := testNode(t, s, 4000, 4096)
	waitFor(t, 10*time.Second, "alloc on the new node", func() bool {
		return liveOnNode(t, s, "sys")[n2.ID] == 1
	})
	got := liveOnNode(t, s, "sys")
	if len(got) != 2 || got[n1.ID] != 1 {
		t.Fatalf("allocs per node = %v", got)
	}
	for _, a := range liveAllocs(t, s, "sys") {
		if a.Name != "sys.web[0]" {
			t.Fatalf("alloc name %q, want sys.web[0]", a.Name)
		}
	}

	// A node outside the job's datacenters gets nothing.
	n3 := &structs.Node{ID: "n3-outside", SecretID: "secret", Name: "outside", Datacenter: "dc9",
		Attributes: n1.Attributes, Drivers: n1.Drivers, NodeResources: n1.NodeResources}
	var nresp structs.NodeUpdateResponse
	if err := s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: n3}, &nresp); err != nil {
		t.Fatal(err)
	}
	if err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: n3.ID, SecretID: n3.SecretID, Status: structs.NodeStatusReady}, &nresp); err != nil {
		t.Fatal(err)
	}
	if len(nresp.EvalIDs) != 0 {
		t.Fatalf("node outside the job's datacenters got evals %v", nresp.EvalIDs)
	}
}

func TestSystemJobIneligibleNodeKeepsAlloc(t *testing.T) {
	s := testServer(t, nil)
	n1 := testNode(t, s, 4000, 4096)
	testNode(t, s, 4000, 4096)
	resp := register(t, s, testSystemJob("sys"))
	evalDone(t, s, resp.EvalID)
	before := liveAllocs(t, s, "sys")
	if len(before) != 2 {
		t.Fatalf("live allocs = %d, want 2", len(before))
	}

	var eresp structs.NodeEligibilityUpdateResponse
	if err := s.RPC("Node.UpdateEligibility", &structs.NodeUpdateEligibilityRequest{NodeID: n1.ID, Eligibility: structs.NodeSchedulingIneligible}, &eresp); err != nil {
		t.Fatal(err)
	}
	// Re-evaluate the job (as a job update would) and check nothing moved.
	resp = register(t, s, testSystemJob("sys"))
	evalDone(t, s, resp.EvalID)
	after := liveAllocs(t, s, "sys")
	if len(after) != 2 {
		t.Fatalf("live allocs after ineligible = %d, want 2", len(after))
	}
	ids := map[string]bool{}
	for _, a := range before {
		ids[a.ID] = true
	}
	for _, a := range after {
		if !ids[a.ID] {
			t.Fatalf("alloc %s on %s is new: ineligible node must keep its alloc untouched", a.ID, a.NodeID)
		}
	}
}
