package feasible

import (
	"fmt"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// A node's port index is kept for the pass: after every trial it holds
// exactly what a fresh index over the proposed allocations holds, and
// placements added to the plan between trials are seen, so ports stay
// distinct on the node.
func TestPortIndex_KeptForPassMatchesFresh(t *testing.T) {
	n := sizedNode("n1", 100_000, 100_000, 0)
	n.NodeResources.MinDynamicPort, n.NodeResources.MaxDynamicPort = 20000, 20011
	st := newTestState(n)
	existing := sizedAlloc("e1", "n1", 10, 10, structs.AllocClientStatusRunning)
	existing.AllocatedResources.Shared.Ports = structs.AllocatedPorts{
		{Label: "x", Value: 20001, HostIP: "10.0.0.1"},
		{Label: "s", Value: 9000, HostIP: "10.0.0.1"},
	}
	st.allocs = append(st.allocs, existing)
	plan := &structs.Plan{NodeAllocation: map[string][]*structs.Allocation{}, NodeUpdate: map[string][]*structs.Allocation{}}
	ctx := NewContext(st, plan, nil, 3, 4)
	tg := &structs.TaskGroup{Name: "g", Count: 10, Networks: []*structs.NetworkResource{{
		DynamicPorts:  []structs.Port{{Label: "a"}, {Label: "b"}},
		ReservedPorts: []structs.Port{{Label: "s", Value: 9000, IgnoreCollision: true}},
	}}}
	b := &BinPackIterator{ctx: ctx, tg: tg}

	bits := func(idx *structs.NetworkIndex) string {
		used := idx.UsedPorts["10.0.0.1"]
		out := ""
		for p := 19999; p <= 20012; p++ {
			if used != nil && used.Check(uint(p)) {
				out += fmt.Sprint(p, " ")
			}
		}
		if used != nil && used.Check(9000) {
			out += "9000"
		}
		return out
	}
	seen := map[int]bool{20001: true}
	placed, compared := 0, 0
	for trial := 0; trial < 12; trial++ {
		u, err := ctx.proposedUsage(n)
		if err != nil {
			t.Fatal(err)
		}
		// Try the node twice per plan state, as a pass does when it
		// looks at a node for several placements: the second try
		// keeps the index.
		b.tryFitIndexed(n, u)
		res := b.tryFitIndexed(n, u)
		if kept := u.node.portIdx; kept != nil && u.node.portAt == u.at {
			fresh := structs.NewNetworkIndex()
			if err := fresh.SetNode(n); err != nil {
				t.Fatal(err)
			}
			fresh.AddAllocs(u.allocs)
			if got, want := bits(kept.idx), bits(fresh); got != want {
				t.Fatalf("trial %d: kept index has %q, a fresh one %q", trial, got, want)
			}
			compared++
		}
		if !res.ok {
			if placed != 5 { // 12 dynamic ports, one taken: five pairs
				t.Fatalf("trial %d failed (%s) after %d placements, want 5", trial, res.dim, placed)
			}
			continue
		}
		a := sizedAlloc(fmt.Sprintf("p%d", trial), "n1", 10, 10, structs.AllocClientStatusPending)
		var dyn []int
		for _, offer := range res.offers {
			for _, p := range offer {
				if p.Value != 9000 {
					if seen[p.Value] {
						t.Fatalf("trial %d: port %d is held already", trial, p.Value)
					}
					dyn = append(dyn, p.Value)
				}
			}
			a.AllocatedResources.Shared.Ports = append(a.AllocatedResources.Shared.Ports, offer...)
		}
		// Odd trials are candidates that are not chosen: their ports
		// stay free.
		if trial%2 == 0 {
			plan.AppendAlloc(a)
			placed++
			for _, v := range dyn {
				seen[v] = true
			}
		}
	}
	if placed != 5 || compared != 12 {
		t.Fatalf("placed %d, compared the kept index %d times; want 5 and 12", placed, compared)
	}
}
