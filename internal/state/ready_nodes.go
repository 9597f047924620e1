package state

import (
	"fmt"
	"sync"

	"github.com/drover-project/drover/internal/structs"
)

// maxReadyDerived bounds how many derived views (one per job scope) a
// ReadyNodeSet keeps; past it, Derive computes without storing.
const maxReadyDerived = 64

// ReadyNodeSet is the list of nodes that may receive placements (status
// ready, not draining, scheduling eligible), in node ID order, as of one
// index of the nodes table. It is computed once per index and shared by
// every snapshot and evaluation that reads the store at that index, so it
// and everything it hands out are read-only.
type ReadyNodeSet struct {
	// Index is the nodes table's index the set was computed at.
	Index uint64
	// Nodes are the ready nodes in ID order. Never modify the slice or
	// the nodes.
	Nodes []*structs.Node

	mu      sync.Mutex
	derived map[string]any
}

// Derive returns the value f computes from the ready nodes, memoised under
// key for the life of the set (the scheduler keeps the nodes of one job
// scope here). f must be a pure function of the nodes for a given key and
// its result is shared read-only.
func (r *ReadyNodeSet) Derive(key string, f func([]*structs.Node) any) any {
	r.mu.Lock()
	v, ok := r.derived[key]
	r.mu.Unlock()
	if ok {
		return v
	}
	v = f(r.Nodes)
	r.mu.Lock()
	defer r.mu.Unlock()
	if have, ok := r.derived[key]; ok {
		return have // computed concurrently: share one value
	}
	if len(r.derived) < maxReadyDerived {
		if r.derived == nil {
			r.derived = make(map[string]any)
		}
		r.derived[key] = v
	}
	return v
}

// readyMemo holds the newest ReadyNodeSet of a store; the store and all its
// snapshots share one memo. Every write to the nodes table bumps its index
// (nodes.go, allocs.go), so a set computed at an index stays valid for any
// snapshot whose nodes table is at that index.
type readyMemo struct {
	mu  sync.Mutex
	set *ReadyNodeSet
}

// ReadyNodes returns the nodes that may receive placements as of this
// store's (or snapshot's) nodes index. Heartbeats do not write nodes, so in
// steady state every evaluation shares one set instead of walking every
// node.
func (s *StateStore) ReadyNodes() (*ReadyNodeSet, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := txn.First(tableIndex, "id", tableNodes)
	if err != nil {
		return nil, fmt.Errorf("state: index lookup %q: %w", tableNodes, err)
	}
	var index uint64
	if raw != nil {
		index = raw.(*IndexEntry).Value
	}
	memo := s.ready
	if memo != nil && index > 0 {
		memo.mu.Lock()
		set := memo.set
		memo.mu.Unlock()
		if set != nil && set.Index == index {
			return set, nil
		}
	}
	iter, err := txn.Get(tableNodes, "id")
	if err != nil {
		return nil, fmt.Errorf("state: listing nodes: %w", err)
	}
	set := &ReadyNodeSet{Index: index}
	for obj := iter.Next(); obj != nil; obj = iter.Next() {
		if n, ok := obj.(*structs.Node); ok && n.Ready() {
			set.Nodes = append(set.Nodes, n)
		}
	}
	if memo != nil && index > 0 {
		memo.mu.Lock()
		// Keep the newest: a late reader of an old snapshot must not
		// evict the set the current evaluations share.
		if memo.set == nil || memo.set.Index < index {
			memo.set = set
		} else if memo.set.Index == index {
			set = memo.set
		}
		memo.mu.Unlock()
	}
	return set, nil
}
