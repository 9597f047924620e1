package server

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// fakeClients reports every pending allocation of the job running (tasks
// started now) and every allocation the servers stopped complete, as the
// nodes' clients would. It returns how many it changed.
func fakeClients(t *testing.T, s *Server, jobID string) int {
	t.Helper()
	now := time.Now()
	byNode := map[string][]*structs.Allocation{}
	for _, a := range allocsOf(t, s, jobID) {
		up := &structs.Allocation{ID: a.ID, NodeID: a.NodeID}
		switch {
		case a.DesiredStatus != structs.AllocDesiredStatusRun && !a.ClientTerminalStatus():
			up.ClientStatus = structs.AllocClientStatusComplete
			up.TaskStates = map[string]*structs.TaskState{"t": {State: structs.TaskStateDead, StartedAt: now, FinishedAt: now}}
		case a.DesiredStatus == structs.AllocDesiredStatusRun && a.ClientStatus == structs.AllocClientStatusPending:
			up.ClientStatus = structs.AllocClientStatusRunning
			up.TaskStates = map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning, StartedAt: now}}
		default:
			continue
		}
		byNode[a.NodeID] = append(byNode[a.NodeID], up)
	}
	n := 0
	for _, list := range byNode {
		var r structs.GenericResponse
		if err := s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: list}, &r); err != nil {
			t.Fatal(err)
		}
		n += len(list)
	}
	return n
}

// Draining a node with 6 allocations of a group whose migrate.max_parallel
// is 2 never has more than 2 of them moving at once and ends with all 6
// running elsewhere; the drain then completes and the node stays
// ineligible.
func TestDrainMovesAtMigratePace(t *testing.T) {
	s := testServer(t, nil)
	drained := testNode(t, s, 4000, 8192)
	job := testJob("web", 6)
	maxParallel, minHealthy := 2, 300*time.Millisecond
	job.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: &maxParallel, MinHealthyTime: &minHealthy}
	evalDone(t, s, register(t, s, job).EvalID)
	fakeClients(t, s, "web")
	if n := len(liveAllocs(t, s, "web")); n != 6 {
		t.Fatalf("%d live allocations before the drain, want 6", n)
	}
	testNode(t, s, 4000, 8192) // where they go

	var resp structs.NodeDrainUpdateResponse
	if err := s.RPC("Node.UpdateDrain", &structs.NodeUpdateDrainRequest{NodeID: drained.ID,
		DrainSpec: &structs.DrainSpec{Deadline: time.Minute}, Meta: map[string]string{"reason": "test"}}, &resp); err != nil {
		t.Fatal(err)
	}
	node, _ := s.State().NodeByID(nil, drained.ID)
	if node.DrainStrategy == nil || node.SchedulingEligibility != structs.NodeSchedulingIneligible ||
		node.LastDrain == nil || node.LastDrain.Status != structs.DrainStatusDraining || node.LastDrain.Meta["reason"] != "test" {
		t.Fatalf("node after the drain request: strategy %+v eligibility %s last %+v", node.DrainStrategy, node.SchedulingEligibility, node.LastDrain)
	}

	worst := 0
	waitFor(t, 30*time.Second, "all 6 running elsewhere and the drain complete", func() bool {
		moving := 0
		for _, a := range allocsOf(t, s, "web") {
			if a.NodeID == drained.ID && !a.ClientTerminalStatus() && a.DesiredTransition.Migrate != nil && *a.DesiredTransition.Migrate {
				moving++ // marked, not yet stopped by its client
			}
			if a.NodeID != drained.ID && a.DesiredStatus == structs.AllocDesiredStatusRun {
				ts := a.TaskStates["t"]
				if a.ClientStatus != structs.AllocClientStatusRunning || ts == nil || time.Since(ts.StartedAt) < minHealthy {
					moving++ // replacement not yet healthy
				}
			}
		}
		worst = max(worst, moving)
		if moving > 2*maxParallel {
			t.Fatalf("%d allocations moving at once", moving)
		}
		fakeClients(t, s, "web")
		n, _ := s.State().NodeByID(nil, drained.ID)
		running := 0
		for _, a := range liveAllocs(t, s, "web") {
			if a.NodeID == drained.ID {
				return false
			}
			if a.ClientStatus == structs.AllocClientStatusRunning {
				running++
			}
		}
		return running == 6 && n.DrainStrategy == nil
	})
	node, _ = s.State().NodeByID(nil, drained.ID)
	if node.SchedulingEligibility != structs.NodeSchedulingIneligible || node.LastDrain.Status != structs.DrainStatusComplete {
		t.Fatalf("after the drain: eligibility %s last %+v", node.SchedulingEligibility, node.LastDrain)
	}
	if worst == 0 {
		t.Fatal("never saw an allocation moving")
	}
}

// A forced drain stops everything at once; cancelling a drain with
// MarkEligible puts the node back in service.
func TestDrainForceAndCancel(t *testing.T) {
	s := testServer(t, nil)
	n1 := testNode(t, s, 4000, 8192)
	evalDone(t, s, register(t, s, testJob("web", 3)).EvalID)
	fakeClients(t, s, "web")
	var resp structs.NodeDrainUpdateResponse
	if err := s.RPC("Node.UpdateDrain", &structs.NodeUpdateDrainRequest{NodeID: n1.ID,
		DrainSpec: &structs.DrainSpec{Deadline: -1}}, &resp); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "every allocation stopped", func() bool {
		for _, a := range allocsOf(t, s, "web") {
			if a.NodeID == n1.ID && a.DesiredStatus == structs.AllocDesiredStatusRun {
				return false
			}
		}
		return true
	})
	if err := s.RPC("Node.UpdateDrain", &structs.NodeUpdateDrainRequest{NodeID: n1.ID, MarkEligible: true}, &resp); err != nil {
		t.Fatal(err)
	}
	node, _ := s.State().NodeByID(nil, n1.ID)
	if node.DrainStrategy != nil || node.SchedulingEligibility != structs.NodeSchedulingEligible {
		t.Fatalf("after cancel: strategy %+v eligibility %s", node.DrainStrategy, node.SchedulingEligibility)
	}
	if err := s.RPC("Node.UpdateDrain", &structs.NodeUpdateDrainRequest{NodeID: "nope"}, &resp); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("unknown node: %v", err)
	}
}

// With ACLs on, a client may drain its own node with its node secret
// (drain_on_shutdown); that secret drains no other node, and no token
// drains none.
func TestNodeUpdateDrain_OwnNodeSecret(t *testing.T) {
	s, _ := aclServer(t)
	n1 := testNode(t, s, 1000, 1000)
	n2 := testNode(t, s, 1000, 1000)
	drain := func(node, token string) error {
		var resp structs.NodeDrainUpdateResponse
		return s.RPC("Node.UpdateDrain", &structs.NodeUpdateDrainRequest{NodeID: node,
			DrainSpec: &structs.DrainSpec{Deadline: time.Minute}, WriteRequest: structs.WriteRequest{AuthToken: token}}, &resp)
	}
	if err := drain(n1.ID, n1.SecretID); err != nil {
		t.Fatalf("a node draining itself with its secret: %v", err)
	}
	if err := drain(n2.ID, n1.SecretID); err == nil {
		t.Fatal("a node secret drained another node")
	}
	if err := drain(n2.ID, ""); err == nil {
		t.Fatal("an anonymous request drained a node")
	}
	if n, _ := s.State().NodeByID(nil, n1.ID); n.DrainStrategy == nil {
		t.Fatal("the node's drain was not stored")
	}
}
