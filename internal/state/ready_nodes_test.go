package state

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

func readyIDs(t *testing.T, s interface {
	ReadyNodes() (*ReadyNodeSet, error)
}) []string {
	t.Helper()
	set, err := s.ReadyNodes()
	must(t, err)
	var ids []string
	for _, n := range set.Nodes {
		ids = append(ids, n.ID)
	}
	return ids
}

// The ready-node memo follows every node write (status, eligibility,
// delete, client alloc updates), is shared by snapshots at one index, and
// an old snapshot keeps seeing its own nodes.
func TestReadyNodes_FollowsNodeWrites(t *testing.T) {
	s := testStore(t)
	for i, id := range []string{"n3", "n1", "n2"} {
		must(t, s.UpsertNode(uint64(10+i), mockNode(id)))
		must(t, s.UpdateNodeStatus(uint64(20+i), id, structs.NodeStatusReady, 1, nil))
	}
	if got := readyIDs(t, s); !slices.Equal(got, []string{"n1", "n2", "n3"}) {
		t.Fatalf("ready = %v, want n1 n2 n3 in ID order", got)
	}
	snapA, _ := s.Snapshot()
	snapB, _ := s.Snapshot()
	a, _ := snapA.ReadyNodes()
	b, _ := snapB.ReadyNodes()
	if a != b {
		t.Fatal("two snapshots at one nodes index computed separate ready sets")
	}

	must(t, s.UpdateNodeEligibility(30, "n2", structs.NodeSchedulingIneligible, 2, nil))
	if got := readyIDs(t, s); !slices.Equal(got, []string{"n1", "n3"}) {
		t.Fatalf("after ineligible n2: ready = %v", got)
	}
	if got := readyIDs(t, snapA); !slices.Equal(got, []string{"n1", "n2", "n3"}) {
		t.Fatalf("old snapshot sees %v, want its own n1 n2 n3", got)
	}
	must(t, s.UpdateNodeStatus(31, "n3", structs.NodeStatusDown, 3, nil))
	if got := readyIDs(t, s); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("after n3 down: ready = %v", got)
	}
	must(t, s.DeleteNode(32, []string{"n1"}))
	if got := readyIDs(t, s); len(got) != 0 {
		t.Fatalf("after deleting n1: ready = %v", got)
	}
	must(t, s.UpdateNodeStatus(33, "n3", structs.NodeStatusReady, 4, nil))
	set, err := s.ReadyNodes()
	must(t, err)
	if set.Index != 33 || len(set.Nodes) != 1 || set.Nodes[0].ID != "n3" {
		t.Fatalf("set at %d = %v, want n3 at 33", set.Index, readyIDs(t, s))
	}
	// A client alloc update rewrites the node (LastAllocUpdateIndex): the
	// set must hand out the current node object.
	job := mockJob("j")
	must(t, s.UpsertJob(40, nil, job))
	alloc := &structs.Allocation{ID: "a1", Namespace: job.Namespace, JobID: job.ID, Job: job,
		NodeID: "n3", TaskGroup: "web", DesiredStatus: structs.AllocDesiredStatusRun,
		ClientStatus: structs.AllocClientStatusPending}
	must(t, s.UpsertAllocs(41, []*structs.Allocation{alloc}))
	up := *alloc
	up.ClientStatus = structs.AllocClientStatusRunning
	must(t, s.UpdateAllocsFromClient(42, []*structs.Allocation{&up}))
	n, _ := s.NodeByID(nil, "n3")
	set, err = s.ReadyNodes()
	must(t, err)
	if len(set.Nodes) != 1 || set.Nodes[0] != n {
		t.Fatalf("ready set holds a stale node object after a client update")
	}
}

func TestReadyNodeSet_DeriveMemoises(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(10, mockNode("n1")))
	must(t, s.UpdateNodeStatus(11, "n1", structs.NodeStatusReady, 1, nil))
	set, err := s.ReadyNodes()
	must(t, err)
	calls := 0
	f := func(nodes []*structs.Node) any { calls++; return len(nodes) }
	if v := set.Derive("k", f); v != 1 {
		t.Fatalf("Derive = %v, want 1", v)
	}
	if v := set.Derive("k", f); v != 1 || calls != 1 {
		t.Fatalf("Derive = %v after %d calls, want one computation", v, calls)
	}
	set.Derive("other", f)
	if calls != 2 {
		t.Fatalf("a second key computed %d times in all, want 2", calls)
	}
}

// A heartbeat-expiry batch marks many nodes down at one Raft index, each in
// its own transaction. A pass between two of them must not leave a list
// that the passes after the batch reuse: they would place on a down node.
func TestReadyNodes_SeveralWritesAtOneIndex(t *testing.T) {
	s := testStore(t)
	for i, id := range []string{"n1", "n2", "n3"} {
		must(t, s.UpsertNode(uint64(10+i), mockNode(id)))
		must(t, s.UpdateNodeStatus(uint64(20+i), id, structs.NodeStatusReady, 1, nil))
	}
	must(t, s.UpdateNodeStatus(50, "n1", structs.NodeStatusDown, 2, nil))
	if got := readyIDs(t, s); !slices.Equal(got, []string{"n2", "n3"}) {
		t.Fatalf("after n1 down: ready = %v", got)
	}
	must(t, s.UpdateNodeStatus(50, "n2", structs.NodeStatusDown, 2, nil))
	if got := readyIDs(t, s); !slices.Equal(got, []string{"n3"}) {
		t.Fatalf("after n2 down at the same index: ready = %v, want n3 only", got)
	}
	snap, _ := s.Snapshot()
	if got := readyIDs(t, snap); !slices.Equal(got, []string{"n3"}) {
		t.Fatalf("snapshot after the batch: ready = %v, want n3 only", got)
	}
}

// plainReady recomputes the ready list without the memo.
func plainReady(t *testing.T, snap *StateSnapshot) []string {
	iter, err := snap.Nodes(nil)
	must(t, err)
	var ids []string
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if n := raw.(*structs.Node); n.Ready() {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// The memoised list equals a plain recomputation from the same snapshot
// while writers change nodes concurrently, several writes sharing a Raft
// index as a batch's do.
func TestReadyNodes_MatchesRecomputationUnderConcurrentWrites(t *testing.T) {
	s := testStore(t)
	const nodes = 8
	id := func(i int) string { return fmt.Sprintf("n%02d", i) }
	for i := 0; i < nodes; i++ {
		must(t, s.UpsertNode(uint64(10+i), mockNode(id(i))))
	}
	stop := make(chan struct{})
	var writer sync.WaitGroup
	writer.Add(1)
	go func() {
		defer writer.Done()
		index := uint64(100)
		for round := 0; ; round++ {
			select {
			case <-stop:
				return
			default:
			}
			index++
			// One "entry": every node written at one index, one
			// transaction each, alternating status and eligibility.
			for i := 0; i < nodes; i++ {
				status := structs.NodeStatusReady
				if (round+i)%3 == 0 {
					status = structs.NodeStatusDown
				}
				if err := s.UpdateNodeStatus(index, id(i), status, int64(round), nil); err != nil {
					t.Error(err)
					return
				}
				elig := structs.NodeSchedulingEligible
				if (round+i)%5 == 0 {
					elig = structs.NodeSchedulingIneligible
				}
				if err := s.UpdateNodeEligibility(index, id(i), elig, int64(round), nil); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	var readers sync.WaitGroup
	deadline := time.Now().Add(time.Second)
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for n := 0; time.Now().Before(deadline) || n < 200; n++ {
				snap, err := s.Snapshot()
				if err != nil {
					t.Error(err)
					return
				}
				set, err := snap.ReadyNodes()
				if err != nil {
					t.Error(err)
					return
				}
				var got []string
				for _, n := range set.Nodes {
					got = append(got, n.ID)
				}
				if want := plainReady(t, snap); !slices.Equal(got, want) {
					t.Errorf("memoised ready list %v, recomputed %v", got, want)
					return
				}
			}
		}()
	}
	readers.Wait()
	close(stop)
	writer.Wait()
}
