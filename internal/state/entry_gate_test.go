package state

import (
	"testing"
	"time"
)

// A snapshot asked for while an entry is being applied waits for the
// entry's end and holds all its writes, made at one index.
func TestSnapshotWaitsForTheWholeEntry(t *testing.T) {
	s := testStore(t)
	s.BeginEntry(7)
	must(t, s.UpsertNode(7, mockNode("n1")))
	got := make(chan *StateSnapshot, 1)
	go func() {
		snap, err := s.Snapshot()
		if err != nil {
			t.Error(err)
		}
		got <- snap
	}()
	deadline := time.Now().Add(5 * time.Second)
	for s.EntryWaiters() == 0 {
		if len(got) > 0 {
			t.Fatal("a snapshot was taken in the middle of an entry")
		}
		if time.Now().After(deadline) {
			t.Fatal("the snapshot neither waited nor returned")
		}
		time.Sleep(time.Millisecond)
	}
	must(t, s.UpsertNode(7, mockNode("n2")))
	s.EndEntry()
	snap := <-got
	for _, id := range []string{"n1", "n2"} {
		if n, _ := snap.NodeByID(nil, id); n == nil {
			t.Fatalf("snapshot after the entry lacks %s", id)
		}
	}
	// Between entries, a snapshot does not wait.
	if _, err := s.Snapshot(); err != nil {
		t.Fatal(err)
	}
}

// Under a steady stream of entries, each writing two nodes in two
// transactions at its index, every snapshot holds whole entries (both
// nodes at one index), and snapshot takers are not starved.
func TestSnapshotsBetweenBackToBackEntries(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(1, mockNode("n1")))
	must(t, s.UpsertNode(1, mockNode("n2")))
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for index := uint64(2); ; index++ {
			select {
			case <-stop:
				return
			default:
			}
			s.BeginEntry(index)
			for _, id := range []string{"n1", "n2"} {
				if err := s.UpdateNodeStatus(index, id, "ready", int64(index), nil); err != nil {
					t.Error(err)
				}
			}
			s.EndEntry()
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 300; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("took only %d snapshots before the deadline: snapshot takers starve", i)
		}
		snap, err := s.Snapshot()
		must(t, err)
		a, _ := snap.NodeByID(nil, "n1")
		b, _ := snap.NodeByID(nil, "n2")
		if a.ModifyIndex != b.ModifyIndex {
			t.Fatalf("snapshot holds n1 at %d and n2 at %d: half an entry", a.ModifyIndex, b.ModifyIndex)
		}
	}
	close(stop)
	<-writerDone
}
