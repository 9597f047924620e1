package feasible

import (
	"fmt"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// referenceProposed is ProposedAllocs computed from scratch, without any
// cache: existing non-terminal allocs minus the plan's stops, evictions
// and updates, plus its placements.
func referenceProposed(st *testState, plan *structs.Plan, nodeID string) []*structs.Allocation {
	existing, _ := st.AllocsByNodeTerminal(nil, nodeID, false)
	remove := map[string]bool{}
	for _, list := range [][]*structs.Allocation{plan.NodeUpdate[nodeID], plan.NodePreemptions[nodeID], plan.NodeAllocation[nodeID]} {
		for _, a := range list {
			remove[a.ID] = true
		}
	}
	var out []*structs.Allocation
	for _, a := range existing {
		if !a.TerminalStatus() && !remove[a.ID] {
			out = append(out, a)
		}
	}
	return append(out, plan.NodeAllocation[nodeID]...)
}

// The per-pass cache of a node's allocations follows every change the
// scheduler makes to the plan: placements, stops, stops taken back,
// evictions and in-place updates.
func TestProposedUsage_FollowsPlan(t *testing.T) {
	st := newTestState(sizedNode("n1", 8000, 8000, 0))
	for i := 0; i < 12; i++ {
		st.allocs = append(st.allocs, sizedAlloc(fmt.Sprintf("e%02d", i), "n1", 100, 100, structs.AllocClientStatusRunning))
	}
	st.allocs = append(st.allocs, sizedAlloc("gone", "n1", 100, 100, structs.AllocClientStatusComplete))
	plan := &structs.Plan{NodeAllocation: map[string][]*structs.Allocation{}, NodeUpdate: map[string][]*structs.Allocation{}}
	ctx := NewContext(st, plan, nil, 1, 1)
	check := func(step string) {
		t.Helper()
		u, err := ctx.proposedUsage("n1")
		if err != nil {
			t.Fatal(err)
		}
		want := referenceProposed(st, plan, "n1")
		if fmt.Sprint(ids(u.allocs)) != fmt.Sprint(ids(want)) {
			t.Fatalf("%s: proposed %v, want %v", step, ids(u.allocs), ids(want))
		}
		if fresh := usageOf(want); fresh.used != u.used || fresh.live != u.live {
			t.Fatalf("%s: usage %+v/%d, want %+v/%d", step, u.used, u.live, fresh.used, fresh.live)
		}
	}
	check("empty plan")
	plan.AppendAlloc(sizedAlloc("p1", "n1", 300, 300, structs.AllocClientStatusPending))
	check("one placement")
	check("one placement, read again")
	plan.AppendStoppedAlloc(st.allocs[3], "stop", "", "")
	check("a stop")
	plan.PopUpdate(st.allocs[3])
	check("the stop taken back")
	plan.AppendStoppedAlloc(st.allocs[4], "stop", "", "")
	check("another stop")
	plan.AppendPreemptedAlloc(st.allocs[5], "p1")
	check("an eviction")
	up := *st.allocs[6]
	up.AllocatedResources = sizedAlloc("x", "n1", 1000, 1000, "").AllocatedResources
	plan.AppendAlloc(&up)
	check("an in-place update")
	plan.AppendAlloc(sizedAlloc("p2", "n1", 300, 300, structs.AllocClientStatusPending))
	check("a second placement")
}

func ids(as []*structs.Allocation) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}
