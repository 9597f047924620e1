package scheduler

import (
	"testing"

	"github.com/drover-project/drover/internal/scheduler/feasible"
	"github.com/drover-project/drover/internal/structs"
)

// A group in network mode "bridge" is placed only on nodes that advertise
// bridge networking; the others are filtered with a reason that says so.
func TestBridgeGroupNeedsBridgeNode(t *testing.T) {
	h := NewHarness()
	plain := mockNode("plain")
	plain.ComputeClass()
	h.State.UpsertNode(plain)
	job := mockJob("web", 1)
	job.TaskGroups[0].Networks = []*structs.NetworkResource{{Mode: "bridge",
		DynamicPorts: []structs.Port{{Label: "http", To: 8080}}}}
	h.State.UpsertJob(job)
	process(t, h, mockEval(job))
	if n := len(liveAllocs(h, "web")); n != 0 {
		t.Fatalf("placed %d allocations on a node without bridge networking", n)
	}
	m := lastEval(t, h).FailedTGAllocs["web"]
	if m == nil || m.ConstraintFiltered["missing network: bridge mode unavailable"] != 1 {
		t.Fatalf("metrics = %+v", m)
	}

	bridged := mockNode("bridged")
	bridged.Attributes[feasible.BridgeAttribute] = "0.1.0"
	bridged.ComputeClass()
	h.State.UpsertNode(bridged)
	process(t, h, mockEval(job))
	got := liveAllocs(h, "web")
	if len(got) != 1 || got[0].NodeID != "bridged" {
		t.Fatalf("allocations %v, want one on node bridged", got)
	}
}
