package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/server/clock"
	"github.com/drover-project/drover/internal/structs"
)

// defaultHeartbeats restores the production TTL, grace and failover TTL
// these tests count with (testServer lengthens them).
func defaultHeartbeats(c *Config) {
	d := DefaultConfig()
	c.MinHeartbeatTTL, c.HeartbeatGrace, c.FailoverHeartbeatTTL = d.MinHeartbeatTTL, d.HeartbeatGrace, d.FailoverHeartbeatTTL
}

// 1,000 nodes fall silent at once. Within one sweep window after their
// deadline all of them are down, written by ONE Raft entry, with ONE
// node-update eval per affected job (not one per job per node), and every
// lost alloc is replaced on the nodes that kept heartbeating.
func TestSilentNodesMarkedDownInOneBatch(t *testing.T) {
	fc := clock.NewFake(time.Now())
	s := testServer(t, func(c *Config) { c.HeartbeatClock = fc; defaultHeartbeats(c) })

	const silentN, aliveN, jobs, count = 1000, 10, 3, 50
	silent := make([]*structs.Node, silentN)
	for i := range silent {
		silent[i] = testNode(t, s, 4000, 4096)
	}
	for j := 0; j < jobs; j++ {
		evalDone(t, s, register(t, s, testJob(fmt.Sprintf("job%d", j), count)).EvalID)
	}
	onNodes := map[string]bool{}
	for j := 0; j < jobs; j++ {
		for _, a := range liveAllocs(t, s, fmt.Sprintf("job%d", j)) {
			onNodes[a.NodeID] = true
		}
	}
	if len(onNodes) < 2 {
		t.Fatalf("allocs on %d node(s): the test needs several so evals have something to coalesce", len(onNodes))
	}
	alive := make([]*structs.Node, aliveN)
	for i := range alive {
		alive[i] = testNode(t, s, 4000, 4096)
	}
	heartbeat := func() {
		for _, n := range alive {
			var r structs.NodeUpdateResponse
			if err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: n.ID, SecretID: n.SecretID, Status: structs.NodeStatusReady}, &r); err != nil {
				t.Fatal(err)
			}
		}
	}

	// TTL 10 s (no jitter beyond 2 s) + grace 10 s: nobody is down at 19.5 s.
	for i := 0; i < 3; i++ {
		fc.Advance(6500 * time.Millisecond)
		heartbeat()
	}
	for _, n := range silent {
		if got, _ := s.State().NodeByID(nil, n.ID); got.Status != structs.NodeStatusReady {
			t.Fatalf("node down after %v, before TTL + grace", 19500*time.Millisecond)
		}
	}
	// The sweeper runs inside Advance: 22.5 s covers the longest TTL
	// (12 s) + grace + one sweep interval.
	fc.Advance(3 * time.Second)
	heartbeat()

	var downIndex uint64
	for _, n := range silent {
		got, _ := s.State().NodeByID(nil, n.ID)
		if got.Status != structs.NodeStatusDown {
			t.Fatalf("silent node %s is %s one sweep after its deadline", n.ID, got.Status)
		}
		if downIndex == 0 {
			downIndex = got.ModifyIndex
		}
		if got.ModifyIndex != downIndex {
			t.Fatalf("nodes marked down by several Raft entries (%d and %d)", downIndex, got.ModifyIndex)
		}
	}
	for _, n := range alive {
		if got, _ := s.State().NodeByID(nil, n.ID); got.Status != structs.NodeStatusReady {
			t.Fatalf("heartbeating node %s is %s", n.ID, got.Status)
		}
	}
	perJob := map[string]int{}
	iter, err := s.State().Evals(nil)
	if err != nil {
		t.Fatal(err)
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		e := raw.(*structs.Evaluation)
		if e.TriggeredBy != structs.EvalTriggerNodeUpdate {
			continue
		}
		if e.CreateIndex != downIndex {
			t.Errorf("node-update eval %s created at %d, not with the nodes at %d", e.ID, e.CreateIndex, downIndex)
		}
		perJob[e.JobID]++
	}
	for j := 0; j < jobs; j++ {
		if n := perJob[fmt.Sprintf("job%d", j)]; n != 1 {
			t.Errorf("job%d has %d node-update evals, want 1 for the whole batch", j, n)
		}
	}

	aliveIDs := map[string]bool{}
	for _, n := range alive {
		aliveIDs[n.ID] = true
	}
	waitFor(t, 20*time.Second, "every lost alloc replaced on a live node", func() bool {
		for j := 0; j < jobs; j++ {
			live := liveAllocs(t, s, fmt.Sprintf("job%d", j))
			if len(live) != count {
				return false
			}
			for _, a := range live {
				if !aliveIDs[a.NodeID] {
					return false
				}
			}
		}
		return true
	})
}

// After a leadership gain every node gets the failover TTL: a leader that
// has not heard from anyone yet does not mark the fleet down.
func TestFailoverTTLKeepsFleetUp(t *testing.T) {
	fc := clock.NewFake(time.Now())
	s := testServer(t, func(c *Config) { c.HeartbeatClock = fc; defaultHeartbeats(c) })
	nodes := make([]*structs.Node, 20)
	for i := range nodes {
		nodes[i] = testNode(t, s, 4000, 4096)
	}
	// What a new leader does.
	s.heartbeats.SetEnabled(false)
	s.heartbeats.SetEnabled(true)
	s.initializeHeartbeatTimers()
	fc.Advance(5 * time.Minute)
	for _, n := range nodes {
		if got, _ := s.State().NodeByID(nil, n.ID); got.Status != structs.NodeStatusReady {
			t.Fatalf("node %s is %s within the failover TTL", n.ID, got.Status)
		}
	}
	fc.Advance(11 * time.Second) // failover TTL 300 s + grace 10 s + a sweep
	for _, n := range nodes {
		if got, _ := s.State().NodeByID(nil, n.ID); got.Status != structs.NodeStatusDown {
			t.Fatalf("node %s is %s after failover TTL + grace", n.ID, got.Status)
		}
	}
}
