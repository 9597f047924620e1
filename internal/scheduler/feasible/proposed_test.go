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
	node := sizedNode("n1", 8000, 8000, 0)
	st := newTestState(node)
	for i := 0; i < 12; i++ {
		st.allocs = append(st.allocs, sizedAlloc(fmt.Sprintf("e%02d", i), "n1", 100, 100, structs.AllocClientStatusRunning))
	}
	st.allocs = append(st.allocs, sizedAlloc("gone", "n1", 100, 100, structs.AllocClientStatusComplete))
	plan := &structs.Plan{NodeAllocation: map[string][]*structs.Allocation{}, NodeUpdate: map[string][]*structs.Allocation{}}
	ctx := NewContext(st, plan, nil, 1, 1)
	check := func(step string) {
		t.Helper()
		u, err := ctx.proposedUsage(node)
		if err != nil {
			t.Fatal(err)
		}
		want := referenceProposed(st, plan, "n1")
		if fmt.Sprint(ids(u.allocs)) != fmt.Sprint(ids(want)) {
			t.Fatalf("%s: proposed %v, want %v", step, ids(u.allocs), ids(want))
		}
		if fresh := usageOf(want); fresh.Used != u.Used || fresh.Live != u.Live {
			t.Fatalf("%s: usage %+v/%d, want %+v/%d", step, u.Used, u.Live, fresh.Used, fresh.Live)
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
	for i := 0; i < 20; i++ { // past the small-plan path
		plan.AppendAlloc(sizedAlloc(fmt.Sprintf("q%02d", i), "n1", 10, 10, structs.AllocClientStatusPending))
	}
	plan.AppendStoppedAlloc(st.allocs[7], "stop", "", "")
	check("many plan entries")
}

func ids(as []*structs.Allocation) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

// The usage sums equal AllocatedResources.Comparable summed over the
// allocations that hold resources, and flag ports and devices.
func TestUsageOf_MatchesComparable(t *testing.T) {
	res := func(cpu, mem, memMax, disk int64) *structs.AllocatedResources {
		return &structs.AllocatedResources{
			Tasks: map[string]*structs.AllocatedTaskResources{
				"a": {Cpu: structs.AllocatedCpuResources{CpuShares: cpu},
					Memory: structs.AllocatedMemoryResources{MemoryMB: mem, MemoryMaxMB: memMax}},
				"b": {Cpu: structs.AllocatedCpuResources{CpuShares: 7}, Memory: structs.AllocatedMemoryResources{MemoryMB: 3}},
				"c": nil,
			},
			Shared: structs.AllocatedSharedResources{DiskMB: disk}}
	}
	allocs := []*structs.Allocation{
		{ID: "1", ClientStatus: structs.AllocClientStatusRunning, AllocatedResources: res(100, 200, 500, 10)},
		{ID: "2", ClientStatus: structs.AllocClientStatusPending, AllocatedResources: res(300, 200, 100, 20)},
		{ID: "3", ClientStatus: structs.AllocClientStatusFailed, AllocatedResources: res(5000, 5000, 0, 5000)},
		{ID: "4", ClientStatus: structs.AllocClientStatusRunning},
	}
	var want structs.ComparableResources
	for _, a := range allocs[:2] {
		want.Add(a.AllocatedResources.Comparable())
	}
	u := usageOf(allocs)
	if u.Used != want || u.Live != 3 || u.Ports || u.Devices {
		t.Fatalf("usage %+v live %d ports %v devices %v, want %+v live 3", u.Used, u.Live, u.Ports, u.Devices, want)
	}
	allocs[1].AllocatedResources.Shared.Ports = structs.AllocatedPorts{{Label: "p", Value: 1}}
	allocs[0].AllocatedResources.Tasks["a"].Devices = []*structs.AllocatedDeviceResource{{Name: "gpu"}}
	if u := usageOf(allocs); !u.Ports || !u.Devices {
		t.Fatalf("ports %v devices %v, want both", u.Ports, u.Devices)
	}
}
