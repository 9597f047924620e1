package state

import (
	"reflect"
	"strings"
	"testing"
)

// A snapshot shares the store's memos, so it must have no way to write:
// its method set holds reads only, and its database refuses a write
// transaction should a read method ever open one.
func TestSnapshotHasOnlyReadMethods(t *testing.T) {
	store := reflect.TypeOf(&StateStore{})
	snap := reflect.TypeOf(&StateSnapshot{})
	writePrefixes := []string{"Upsert", "Update", "Delete", "Set", "Restore", "Abandon(", "Scratch", "Snapshot", "NodePull", "BeginEntry(", "EndEntry(", "EntryWaiters(", "CollectEntryChanges(", "TakeEntryChanges("}
	for i := 0; i < snap.NumMethod(); i++ {
		name := snap.Method(i).Name
		for _, p := range writePrefixes {
			if strings.HasPrefix(name+"(", p) {
				t.Errorf("StateSnapshot has %s: a snapshot must have no write method", name)
			}
		}
		if _, ok := store.MethodByName(name); !ok {
			t.Errorf("StateSnapshot has %s, which StateStore lacks", name)
		}
	}
	// Every store method a snapshot lacks is a write or the live store's own.
	for i := 0; i < store.NumMethod(); i++ {
		name := store.Method(i).Name
		if _, ok := snap.MethodByName(name); ok {
			continue
		}
		known := false
		for _, p := range writePrefixes {
			known = known || strings.HasPrefix(name+"(", p)
		}
		if !known {
			t.Errorf("StateStore.%s is missing on StateSnapshot: a read method must be defined on reader", name)
		}
	}
	for _, w := range []string{"UpsertJob", "UpsertAllocs", "UpsertPlanResults", "UpdateNodeStatus", "DeleteNode"} {
		if _, ok := snap.MethodByName(w); ok {
			t.Errorf("StateSnapshot has %s", w)
		}
	}
}

func TestSnapshotRefusesWriteTransactions(t *testing.T) {
	s := testStore(t)
	snap, err := s.Snapshot()
	must(t, err)
	defer func() {
		if recover() == nil {
			t.Fatal("a write transaction on a snapshot did not panic")
		}
	}()
	snap.db.Txn(true)
}

// A scratch copy takes writes that neither the store nor its memos see.
func TestScratchWritesStayPrivate(t *testing.T) {
	s := testStore(t)
	must(t, s.UpsertNode(10, mockNode("n1")))
	before, err := s.ReadyNodes()
	must(t, err)
	scratch, err := s.Scratch()
	must(t, err)
	job := mockJob("web")
	must(t, scratch.UpsertJob(20, nil, job))
	must(t, scratch.UpsertNode(21, mockNode("n2")))
	if j, _ := s.JobByID(nil, job.Namespace, job.ID); j != nil {
		t.Fatal("a job written to a scratch copy is in the store")
	}
	if j, _ := scratch.JobByID(nil, job.Namespace, job.ID); j == nil {
		t.Fatal("the scratch copy lost its own write")
	}
	if scratch.ready == s.ready || scratch.nodeAllocs == s.nodeAllocs {
		t.Fatal("a scratch copy shares the store's memos")
	}
	after, err := s.ReadyNodes()
	must(t, err)
	if len(after.Nodes) != len(before.Nodes) {
		t.Fatalf("store's ready nodes changed from %d to %d by a scratch write", len(before.Nodes), len(after.Nodes))
	}
}
