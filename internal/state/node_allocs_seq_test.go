package state

import (
	"slices"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// liveIDs reads nodeID's live allocations as the scheduler does, from snap.
func liveIDs(t *testing.T, snap *reader, nodeID string) []string {
	t.Helper()
	la, err := snap.LiveAllocsByNodeReader()(nodeID)
	must(t, err)
	return allocIDs(la.Allocs)
}

// A write's entry is used without the version check by readers of the
// snapshots that see the write, and only by them; a reader of an older
// snapshot gets its own point in time, and what it collects after the
// write is never taken for the newest allocations.
func TestNodeAllocsSeq_StampsFollowWrites(t *testing.T) {
	for _, warm := range []bool{true, false} {
		name := "no entry before the write"
		if warm {
			name = "entry before the write"
		}
		t.Run(name, func(t *testing.T) {
			s := testStore(t)
			job := storedJob(t, s, 2, mockJob("j"))
			must(t, s.UpsertNode(3, mockNode("n1")))
			must(t, s.UpsertAllocs(10, []*structs.Allocation{mockAlloc("a1", "n1", job)}))
			if warm {
				if got := liveIDs(t, &s.reader, "n1"); !slices.Equal(got, []string{"a1"}) {
					t.Fatalf("before: %v", got)
				}
			}
			old, err := s.Snapshot()
			must(t, err)
			oldSeq := readAllocSeq(old.db.Txn(false))

			must(t, s.UpsertAllocs(11, []*structs.Allocation{mockAlloc("a2", "n1", job)}))
			newSeq := readAllocSeq(s.db.Txn(false))
			if newSeq != oldSeq+1 {
				t.Fatalf("write numbered %d after %d", newSeq, oldSeq)
			}

			// The old snapshot's reader collects its own allocations...
			if got := liveIDs(t, &old.reader, "n1"); !slices.Equal(got, []string{"a1"}) {
				t.Fatalf("old snapshot: %v", got)
			}
			// ...which are not right for the new number.
			if v := s.nodeAllocs.fresh("n1", newSeq); v != nil && !slices.Equal(allocIDs(v.live.Allocs), []string{"a1", "a2"}) {
				t.Fatalf("entry for the new number holds %v", allocIDs(v.live.Allocs))
			}
			if got := liveIDs(t, &s.reader, "n1"); !slices.Equal(got, []string{"a1", "a2"}) {
				t.Fatalf("new snapshot: %v", got)
			}
			// Now the newest entry is stamped: the next reader skips the
			// seek, readers of the old snapshot do not take it.
			v := s.nodeAllocs.fresh("n1", newSeq)
			if v == nil || !slices.Equal(allocIDs(v.live.Allocs), []string{"a1", "a2"}) {
				t.Fatalf("no stamped entry for the newest allocations: %v", v)
			}
			if s.nodeAllocs.fresh("n1", oldSeq) != nil {
				t.Fatal("the newest entry covers a snapshot before its write")
			}
			if got := liveIDs(t, &old.reader, "n1"); !slices.Equal(got, []string{"a1"}) {
				t.Fatalf("old snapshot again: %v", got)
			}
			// A client update closes the entry's range before it commits.
			must(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{{ID: "a2", ClientStatus: structs.AllocClientStatusComplete}}))
			if v.stamp.covers(newSeq + 1) {
				t.Fatal("the entry still covers the snapshot after a write to its node")
			}
			if got := liveIDs(t, &s.reader, "n1"); !slices.Equal(got, []string{"a1"}) {
				t.Fatalf("after the client update: %v", got)
			}
		})
	}
}

// A write that changes allocations without numbering itself (a bug) is
// counted, and every entry is dropped: reads stay right.
func TestNodeAllocsSeq_UnnumberedWriteDropsEntries(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 2, mockJob("j"))
	must(t, s.UpsertNode(3, mockNode("n1")))
	must(t, s.UpsertAllocs(10, []*structs.Allocation{mockAlloc("a1", "n1", job)}))
	if got := liveIDs(t, &s.reader, "n1"); !slices.Equal(got, []string{"a1"}) {
		t.Fatalf("before: %v", got)
	}
	txn := s.db.Txn(true)
	must(t, txn.Insert(tableAllocs, mockAlloc("a2", "n1", job)))
	txn.Commit()
	if n := s.nodeAllocs.bypassed.Load(); n != 1 {
		t.Fatalf("unnumbered writes counted: %d", n)
	}
	if got := liveIDs(t, &s.reader, "n1"); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("after an unnumbered write: %v", got)
	}
	// Nothing is stamped until the next numbered write.
	if s.nodeAllocs.fresh("n1", readAllocSeq(s.db.Txn(false))) != nil {
		t.Fatal("an entry was stamped for a number an unnumbered write shares")
	}
	must(t, s.UpsertAllocs(11, []*structs.Allocation{mockAlloc("a3", "n1", job)}))
	if got := liveIDs(t, &s.reader, "n1"); !slices.Equal(got, []string{"a1", "a2", "a3"}) {
		t.Fatalf("after the next write: %v", got)
	}
}
