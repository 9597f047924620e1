package server

import (
	"testing"

	"github.com/hashicorp/raft"
)

// countingStore counts reads that reach the underlying store.
type countingStore struct {
	*raft.InmemStore
	reads int
}

func (s *countingStore) GetLog(i uint64, out *raft.Log) error {
	s.reads++
	return s.InmemStore.GetLog(i, out)
}

func TestLogCache_BoundedByEntriesAndBytes(t *testing.T) {
	store := &countingStore{InmemStore: raft.NewInmemStore()}
	c := newLogCache(4, 100, store)
	entry := func(i uint64, size int) *raft.Log {
		return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: make([]byte, size)}
	}
	for i := uint64(1); i <= 6; i++ {
		if err := c.StoreLog(entry(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	get := func(i uint64) {
		t.Helper()
		var l raft.Log
		if err := c.GetLog(i, &l); err != nil || l.Index != i {
			t.Fatalf("GetLog(%d) = %d, %v", i, l.Index, err)
		}
	}
	// Entry bound: 3..6 cached, 1..2 come from the store.
	for i := uint64(3); i <= 6; i++ {
		get(i)
	}
	if store.reads != 0 {
		t.Fatalf("%d store reads for cached entries", store.reads)
	}
	get(1)
	if store.reads != 1 {
		t.Fatalf("entry 1 should come from the store")
	}
	// Byte bound: two 45-byte entries push out everything older.
	if err := c.StoreLogs([]*raft.Log{entry(7, 45), entry(8, 45)}); err != nil {
		t.Fatal(err)
	}
	if c.bytes > 100 {
		t.Fatalf("cache holds %d bytes, bound 100", c.bytes)
	}
	store.reads = 0
	get(8)
	get(7)
	if store.reads != 0 {
		t.Fatal("newest entries not cached")
	}
	get(5)
	if store.reads != 1 {
		t.Fatal("entry 5 should have been evicted by the byte bound")
	}
	// An entry larger than the bound is not cached; later ones are.
	if err := c.StoreLogs([]*raft.Log{entry(9, 500), entry(10, 5)}); err != nil {
		t.Fatal(err)
	}
	store.reads = 0
	get(10)
	get(9)
	if store.reads != 1 || c.bytes != 5 {
		t.Fatalf("reads=%d bytes=%d", store.reads, c.bytes)
	}
	// A truncation empties the cache.
	if err := c.DeleteRange(8, 10); err != nil {
		t.Fatal(err)
	}
	if c.lo != 0 || c.bytes != 0 {
		t.Fatal("cache kept entries across a truncation")
	}
}
