package server

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Evaluations can be deleted only while the broker is paused: by ID
// (unknown IDs are a 404, an evaluation a running allocation came from is
// kept) or by filter; a deleted evaluation never runs once the broker
// resumes.
func TestEvalDelete_OnlyWhilePaused(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	running := register(t, s, testJob("running", 1))
	evalDone(t, s, running.EvalID)

	del := func(req *structs.EvalOperatorDeleteRequest) (int, error) {
		var reply structs.EvalOperatorDeleteResponse
		err := s.RPC("Eval.Delete", req, &reply)
		return reply.Count, err
	}
	if _, err := del(&structs.EvalOperatorDeleteRequest{EvalIDs: []string{running.EvalID}}); err == nil || !strings.Contains(err.Error(), "eval broker is enabled") {
		t.Fatalf("delete with the broker running: %v", err)
	}

	setSchedConfig(t, s, func(c *structs.SchedulerConfiguration) { c.PauseEvalBroker = true })
	waitFor(t, 5*time.Second, "broker paused", func() bool { return !s.broker.Enabled() })
	a := register(t, s, testJob("flood-a", 1))
	b := register(t, s, testJob("flood-b", 1))
	c := register(t, s, testJob("keep", 1))

	if _, err := del(&structs.EvalOperatorDeleteRequest{}); err == nil {
		t.Fatal("delete without IDs or filter accepted")
	}
	if _, err := del(&structs.EvalOperatorDeleteRequest{EvalIDs: []string{"8E231CF4-CA48-43FF-B694-5801E69E22FA"}}); err == nil || !strings.Contains(err.Error(), "eval not found") {
		t.Fatalf("unknown ID: %v", err)
	}
	if _, err := del(&structs.EvalOperatorDeleteRequest{EvalIDs: []string{running.EvalID}}); err == nil || !strings.Contains(err.Error(), "not safe to delete") {
		t.Fatalf("eval of a running alloc: %v", err)
	}
	if n, err := del(&structs.EvalOperatorDeleteRequest{EvalIDs: []string{a.EvalID}}); err != nil || n != 1 {
		t.Fatalf("by ID: %d %v", n, err)
	}
	if n, err := del(&structs.EvalOperatorDeleteRequest{Filter: `JobID == "flood-b"`}); err != nil || n != 1 {
		t.Fatalf("by filter: %d %v", n, err)
	}
	for _, id := range []string{a.EvalID, b.EvalID} {
		if ev, _ := s.State().EvalByID(nil, id); ev != nil {
			t.Fatalf("eval %s still stored", id)
		}
	}

	setSchedConfig(t, s, func(c *structs.SchedulerConfiguration) { c.PauseEvalBroker = false })
	evalDone(t, s, c.EvalID)
	if len(liveAllocs(t, s, "flood-a")) != 0 || len(liveAllocs(t, s, "flood-b")) != 0 || len(liveAllocs(t, s, "keep")) != 1 {
		t.Fatal("a deleted evaluation ran, or the kept one did not")
	}
}
