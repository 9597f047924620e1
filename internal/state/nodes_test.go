package state

import (
	"fmt"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

func TestUpsertNode_DefaultsAndOwnership(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(10, mockNode("n1")))
	n, _ := s.NodeByID(nil, "n1")
	if n.Status != structs.NodeStatusInit || n.SchedulingEligibility != structs.NodeSchedulingEligible ||
		n.NodePool != structs.DefaultNodePool || n.ComputedClass == "" || n.CreateIndex != 10 {
		t.Fatalf("new node defaults: %+v", n)
	}
	if bySecret, _ := s.NodeBySecretID(nil, "secret-n1"); bySecret == nil || bySecret.ID != "n1" {
		t.Fatal("NodeBySecretID failed")
	}
	must(t, s.UpdateNodeStatus(11, "n1", structs.NodeStatusReady, 100, nil))
	must(t, s.UpdateNodeEligibility(12, "n1", structs.NodeSchedulingIneligible, 101, nil))

	// Re-register with a new fingerprint: status and eligibility stay.
	re := mockNode("n1")
	re.Status = structs.NodeStatusInit
	re.SchedulingEligibility = structs.NodeSchedulingEligible
	re.Attributes["kernel.name"] = "darwin"
	must(t, s.UpsertNode(13, re))
	n, _ = s.NodeByID(nil, "n1")
	if n.Status != structs.NodeStatusReady || n.SchedulingEligibility != structs.NodeSchedulingIneligible {
		t.Fatalf("re-register changed server fields: status=%q elig=%q", n.Status, n.SchedulingEligibility)
	}
	if n.Attributes["kernel.name"] != "darwin" || n.CreateIndex != 10 || n.ModifyIndex != 13 {
		t.Fatalf("re-register not applied: %+v", n)
	}
	if re.ComputedClass != "" {
		t.Fatal("UpsertNode mutated its argument")
	}
}

func TestUpdateNodeStatus_HeartbeatIndexes(t *testing.T) {
	cases := []struct {
		from, to string
		want     uint64
	}{
		{structs.NodeStatusReady, structs.NodeStatusDown, 20},
		{structs.NodeStatusInit, structs.NodeStatusDisconnected, 20},
		{structs.NodeStatusDown, structs.NodeStatusDisconnected, 7},
		{structs.NodeStatusDown, structs.NodeStatusReady, 0},
	}
	for _, c := range cases {
		t.Run(c.from+"->"+c.to, func(t *testing.T) {
			s := testStore(t)
			must(t, s.UpsertNode(5, mockNode("n1")))
			must(t, s.UpdateNodeStatus(7, "n1", c.from, 1, nil))
			must(t, s.UpdateNodeStatus(20, "n1", c.to, 2, nil))
			n, _ := s.NodeByID(nil, "n1")
			if n.LastMissedHeartbeatIndex != c.want || n.Status != c.to || n.StatusUpdatedAt != 2 {
				t.Fatalf("LastMissedHeartbeatIndex=%d status=%q, want %d", n.LastMissedHeartbeatIndex, n.Status, c.want)
			}
		})
	}
}

func TestNodeEvents_KeepLastTen(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(5, mockNode("n1")))
	for i := 0; i < 15; i++ {
		must(t, s.UpdateNodeStatus(uint64(10+i), "n1", structs.NodeStatusReady, int64(i),
			&structs.NodeEvent{Message: fmt.Sprint(i)}))
	}
	n, _ := s.NodeByID(nil, "n1")
	if len(n.Events) != 10 || n.Events[0].Message != "5" || n.Events[9].Message != "14" || n.Events[9].CreateIndex != 24 {
		t.Fatalf("events: %d first=%q", len(n.Events), n.Events[0].Message)
	}
}

func TestNodeEligibilityAndDelete(t *testing.T) {
	s := testStore(t)
	if err := s.UpdateNodeStatus(5, "missing", structs.NodeStatusReady, 0, nil); err == nil {
		t.Fatal("status of unknown node accepted")
	}
	n := mockNode("n1")
	must(t, s.UpsertNode(5, n))
	if err := s.UpdateNodeEligibility(6, "n1", "maybe", 0, nil); err == nil {
		t.Fatal("bad eligibility accepted")
	}
	// A draining node cannot become eligible (drain is kept across registers,
	// so set it through the restore path).
	r, _ := s.Restore()
	d := *n
	d.DrainStrategy = &structs.DrainStrategy{}
	must(t, r.NodeRestore(&d))
	must(t, r.Commit())
	if err := s.UpdateNodeEligibility(7, "n1", structs.NodeSchedulingEligible, 0, nil); err == nil {
		t.Fatal("draining node made eligible")
	}
	must(t, s.UpsertNode(8, mockNode("n2")))
	if err := s.DeleteNode(9, []string{"n2", "nope"}); err == nil {
		t.Fatal("delete of unknown node accepted")
	}
	if got, _ := s.NodeByID(nil, "n2"); got == nil {
		t.Fatal("failed delete removed a node")
	}
	must(t, s.DeleteNode(10, []string{"n1", "n2"}))
	it, err := s.Nodes(nil)
	if c := iterCount(t, it, err); c != 0 {
		t.Fatalf("%d nodes left", c)
	}
	if idx, _ := s.Index("nodes"); idx != 10 {
		t.Fatalf("nodes index = %d", idx)
	}
}

func TestNodesByIDPrefix(t *testing.T) {
	s := testStore(t)
	for i, id := range []string{"abc1", "abc2", "def"} {
		must(t, s.UpsertNode(uint64(10+i), mockNode(id)))
	}
	it, err := s.NodesByIDPrefix(nil, "abc")
	if n := iterCount(t, it, err); n != 2 {
		t.Fatalf("prefix abc = %d", n)
	}
}
