package state

import (
	"fmt"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// The one-transaction reader lists what AllocsByNodeTerminal lists, and
// keeps reading the state it was opened on.
func TestLiveAllocsByNodeReader(t *testing.T) {
	s := testStore(t)
	job := mockJob("j")
	must(t, s.UpsertJob(10, nil, job))
	var allocs []*structs.Allocation
	for i, st := range []string{structs.AllocClientStatusRunning, structs.AllocClientStatusComplete,
		structs.AllocClientStatusPending, structs.AllocClientStatusRunning} {
		allocs = append(allocs, &structs.Allocation{ID: fmt.Sprintf("a%d", i), Namespace: job.Namespace,
			JobID: job.ID, Job: job, NodeID: []string{"n1", "n2"}[i%2], TaskGroup: "web",
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: st})
	}
	must(t, s.UpsertAllocs(11, allocs))
	snap, _ := s.Snapshot()
	read := snap.LiveAllocsByNodeReader()
	for _, node := range []string{"n1", "n2", "none"} {
		got, err := read(node)
		must(t, err)
		want, err := snap.AllocsByNodeTerminal(nil, node, false)
		must(t, err)
		if fmt.Sprint(allocIDs(got)) != fmt.Sprint(allocIDs(want)) {
			t.Fatalf("%s: reader %v, AllocsByNodeTerminal %v", node, allocIDs(got), allocIDs(want))
		}
	}
	if got, _ := read("n2"); fmt.Sprint(allocIDs(got)) != "[a3]" {
		t.Fatalf("n2 live allocs = %v, want [a3] (a1 is complete)", allocIDs(got))
	}
	// A reader opened on the store keeps its point in time.
	live := s.LiveAllocsByNodeReader()
	more := *allocs[3]
	more.ID = "a9"
	must(t, s.UpsertAllocs(12, []*structs.Allocation{&more}))
	if got, _ := live("n2"); fmt.Sprint(allocIDs(got)) != "[a3]" {
		t.Fatalf("reader sees %v after a later write, want [a3]", allocIDs(got))
	}
}

func allocIDs(as []*structs.Allocation) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}
