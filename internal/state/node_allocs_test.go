package state

import (
	"fmt"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// The reader lists what AllocsByNodeTerminal lists, keeps reading the state
// it was opened on, shares one LiveAllocs between snapshots while a node's
// allocations are unchanged, and reads afresh after any write to them
// (placement, client update, stop).
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
		if fmt.Sprint(allocIDs(got.Allocs)) != fmt.Sprint(allocIDs(want)) {
			t.Fatalf("%s: reader %v, AllocsByNodeTerminal %v", node, allocIDs(got.Allocs), allocIDs(want))
		}
	}
	n1, _ := read("n1")
	n2, _ := read("n2")
	if fmt.Sprint(allocIDs(n1.Allocs)) != "[a0 a2]" || fmt.Sprint(allocIDs(n2.Allocs)) != "[a3]" {
		t.Fatalf("n1 %v n2 %v, want [a0 a2] and [a3] (a1 is complete)", allocIDs(n1.Allocs), allocIDs(n2.Allocs))
	}

	check := func(step string, read func(string) (*LiveAllocs, error), node string, want string, same *LiveAllocs) *LiveAllocs {
		t.Helper()
		got, err := read(node)
		must(t, err)
		if fmt.Sprint(allocIDs(got.Allocs)) != want {
			t.Fatalf("%s: %s has %v, want %s", step, node, allocIDs(got.Allocs), want)
		}
		if same != nil && got != same {
			t.Fatalf("%s: %s was read afresh though unchanged", step, node)
		}
		if same == nil && got == n1 || same == nil && got == n2 {
			t.Fatalf("%s: %s served from the memo though changed", step, node)
		}
		return got
	}

	// A placement on n2 leaves n1 shared and changes n2; a reader opened
	// before the write keeps its point in time (reading it afresh: the
	// write moved the memo's entry of n2 on to the new version).
	old := s.LiveAllocsByNodeReader()
	more := *allocs[3]
	more.ID = "a9"
	must(t, s.UpsertAllocs(12, []*structs.Allocation{&more}))
	check("old reader", old, "n2", "[a3]", nil)
	now := s.LiveAllocsByNodeReader()
	check("after placement", now, "n1", "[a0 a2]", n1)
	n2 = check("after placement", now, "n2", "[a3 a9]", nil)

	// A client update that leaves the alloc live still rewrites it.
	up := *allocs[2]
	up.ClientStatus = structs.AllocClientStatusRunning
	must(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{&up}))
	n1 = check("after client update", s.LiveAllocsByNodeReader(), "n1", "[a0 a2]", nil)
	if n1.Allocs[1].ClientStatus != structs.AllocClientStatusRunning {
		t.Fatal("the memo served the alloc as it was before the client update")
	}
	// An alloc turning terminal leaves the list.
	done := *allocs[0]
	done.ClientStatus = structs.AllocClientStatusComplete
	must(t, s.UpdateAllocsFromClient(14, []*structs.Allocation{&done}))
	check("after completion", s.LiveAllocsByNodeReader(), "n1", "[a2]", nil)
	check("after completion", s.LiveAllocsByNodeReader(), "n2", "[a3 a9]", n2)
}

func TestLiveAllocs_Usage(t *testing.T) {
	res := func(cpu, mem int64) *structs.AllocatedResources {
		return &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"t": {Cpu: structs.AllocatedCpuResources{CpuShares: cpu}, Memory: structs.AllocatedMemoryResources{MemoryMB: mem}}},
			Shared: structs.AllocatedSharedResources{DiskMB: 10}}
	}
	la := &LiveAllocs{Allocs: []*structs.Allocation{{ID: "a", AllocatedResources: res(100, 64)}, {ID: "b", AllocatedResources: res(50, 32)}}}
	want := structs.AllocsUsage{Used: structs.ComparableResources{CPU: 150, MemoryMB: 96, MemoryMaxMB: 96, DiskMB: 20}, Live: 2}
	if got := la.Usage(); got != want {
		t.Fatalf("Usage = %+v, want %+v", got, want)
	}
	la.Allocs = nil // computed once: the stored allocations never change
	if got := la.Usage(); got != want {
		t.Fatalf("second Usage = %+v, want %+v", got, want)
	}
}

func allocIDs(as []*structs.Allocation) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

// Evaluations on several workers share the memos while the store is
// written; each reads the allocations and ready nodes of its own snapshot
// (run with -race).
func TestSharedMemos_ConcurrentReaders(t *testing.T) {
	s := testStore(t)
	job := mockJob("j")
	must(t, s.UpsertJob(2, nil, job))
	for i := 0; i < 4; i++ {
		id := fmt.Sprintf("n%d", i)
		must(t, s.UpsertNode(uint64(3+i), mockNode(id)))
		must(t, s.UpdateNodeStatus(uint64(10+i), id, structs.NodeStatusReady, 1, nil))
	}
	done := make(chan struct{})
	errs := make(chan error, 8)
	for w := 0; w < 4; w++ {
		go func() {
			errs <- readUntil(done, s)
		}()
	}
	for i := 0; i < 200; i++ {
		a := &structs.Allocation{ID: fmt.Sprintf("a%03d", i), Namespace: job.Namespace, JobID: job.ID, Job: job,
			NodeID: fmt.Sprintf("n%d", i%4), TaskGroup: "web", DesiredStatus: structs.AllocDesiredStatusRun,
			ClientStatus: structs.AllocClientStatusRunning}
		must(t, s.UpsertAllocs(uint64(100+i), []*structs.Allocation{a}))
	}
	close(done)
	for w := 0; w < 4; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// readUntil reads snapshots through the memos until done and reports the
// first disagreement with a plain read.
func readUntil(done <-chan struct{}, s *StateStore) error {
	for {
		select {
		case <-done:
			return nil
		default:
		}
		snap, _ := s.Snapshot()
		read := snap.LiveAllocsByNodeReader()
		set, err := snap.ReadyNodes()
		if err != nil {
			return err
		}
		set.Derive("all", func(ns []*structs.Node) any { return len(ns) })
		for i := 0; i < 4; i++ {
			id := fmt.Sprintf("n%d", i)
			la, err := read(id)
			if err != nil {
				return err
			}
			want, _ := snap.AllocsByNodeTerminal(nil, id, false)
			if len(la.Allocs) != len(want) {
				return fmt.Errorf("%s: %d allocs from the reader, %d in the snapshot", id, len(la.Allocs), len(want))
			}
			la.Usage()
		}
	}
}

// Readers opened on two different stale versions of a node's allocations
// (each replaced since) never serve each other's list: a subtree's watch
// channel identifies its version even when nobody watched it before it
// was replaced.
func TestLiveAllocsByNodeReader_StaleVersionsStayApart(t *testing.T) {
	s := testStore(t)
	job := mockJob("j")
	must(t, s.UpsertJob(10, nil, job))
	place := func(index uint64, id string) {
		t.Helper()
		must(t, s.UpsertAllocs(index, []*structs.Allocation{{ID: id, Namespace: job.Namespace, JobID: job.ID,
			Job: job, NodeID: "n1", TaskGroup: "web", DesiredStatus: structs.AllocDesiredStatusRun,
			ClientStatus: structs.AllocClientStatusRunning}}))
	}
	place(11, "a1")
	v1 := s.LiveAllocsByNodeReader()
	place(12, "a2")
	v2 := s.LiveAllocsByNodeReader()
	place(13, "a3")
	// Both readers' versions were replaced before either read them.
	for _, c := range []struct {
		read func(string) (*LiveAllocs, error)
		want string
	}{{v1, "[a1]"}, {v2, "[a1 a2]"}, {v1, "[a1]"}, {v2, "[a1 a2]"}} {
		got, err := c.read("n1")
		must(t, err)
		if fmt.Sprint(allocIDs(got.Allocs)) != c.want {
			t.Fatalf("stale reader got %v, want %s", allocIDs(got.Allocs), c.want)
		}
	}
}
