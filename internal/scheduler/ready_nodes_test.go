package scheduler

import (
	"fmt"
	"testing"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// walkOnly hides the state's memoised ready nodes so readyNodes walks
// every node, as it does for states without the memo.
type walkOnly struct{ State }

// The memoised ready nodes of the state store give every job scope the
// same nodes, in the same order, with the same per-datacenter counts as a
// walk over all nodes.
func TestReadyNodes_MemoMatchesWalk(t *testing.T) {
	st, err := state.NewStateStore()
	if err != nil {
		t.Fatal(err)
	}
	idx := uint64(10)
	for i := 0; i < 60; i++ {
		n := mockNode(fmt.Sprintf("node-%03d", i))
		n.Datacenter = []string{"dc1", "dc2", "eu-1"}[i%3]
		n.NodePool = []string{"default", "gpu", ""}[i%5%3]
		switch i % 7 {
		case 1:
			n.Status = structs.NodeStatusDown
		case 2:
			n.SchedulingEligibility = structs.NodeSchedulingIneligible
		case 3:
			n.DrainStrategy = &structs.DrainStrategy{}
		case 4:
			n.Status = structs.NodeStatusInit
		}
		idx++
		if err := st.UpsertNode(idx, n); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := st.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	scopes := []struct {
		dcs  []string
		pool string
	}{
		{nil, ""}, {[]string{"dc*"}, ""}, {[]string{"dc2"}, "gpu"}, {[]string{"eu-1", "dc1"}, "all"},
		{[]string{"*"}, "all"}, {[]string{"nope"}, ""}, {[]string{"dc[12]"}, "default"},
	}
	all, err := (&GenericScheduler{evalRun: evalRun{state: snap}}).readyNodes(mockJob("j", 1))
	if err != nil || len(all.nodes) == 0 || len(all.nodes) >= 60 {
		t.Fatalf("the default scope has %d of 60 nodes (%v): the fixture filters nothing or everything", len(all.nodes), err)
	}
	for _, sc := range scopes {
		job := mockJob("j", 1)
		job.Datacenters, job.NodePool = sc.dcs, sc.pool
		memo := &GenericScheduler{evalRun: evalRun{state: snap}}
		walk := &GenericScheduler{evalRun: evalRun{state: walkOnly{snap}}}
		for round := 0; round < 2; round++ { // the second round reads the memo
			got, err := memo.readyNodes(job)
			if err != nil {
				t.Fatal(err)
			}
			want, err := walk.readyNodes(job)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.nodes) != len(want.nodes) {
				t.Fatalf("%v/%q: memo has %d nodes, walk %d", sc.dcs, sc.pool, len(got.nodes), len(want.nodes))
			}
			for i := range got.nodes {
				if got.nodes[i] != want.nodes[i] {
					t.Fatalf("%v/%q: node %d is %s, walk has %s", sc.dcs, sc.pool, i, got.nodes[i].ID, want.nodes[i].ID)
				}
			}
			if fmt.Sprint(got.byDC) != fmt.Sprint(want.byDC) {
				t.Fatalf("%v/%q: per-DC counts %v, walk %v", sc.dcs, sc.pool, got.byDC, want.byDC)
			}
		}
	}
}
