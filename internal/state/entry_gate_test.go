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
