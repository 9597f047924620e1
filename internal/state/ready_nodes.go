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
// version of the nodes table. It is computed once per version and shared
// by every snapshot and evaluation that reads the store at that version,
// so it and everything it hands out are read-only.
type ReadyNodeSet struct {
	// Index is the nodes table's Raft index the set was computed at
	// (informational: several versions may share one index).
	Index uint64
	// Nodes are the ready nodes in ID order. Never modify the slice or
	// the nodes.
	Nodes []*structs.Node

	// version is the watch channel of the nodes table's root the set was
	// computed from (see readyMemo).
	version <-chan struct{}

	mu      sync.Mutex
	derived map[string]any
}

// current reports whether no committed write changed the nodes since the
// set was computed.
func (r *ReadyNodeSet) current() bool {
	select {
	case <-r.version:
		return false
	default:
		return true
	}
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
// snapshots share one memo. A set is keyed by the version of the nodes
// table it was computed from: the watch channel of the root of the table's
// ID index. Every committed write that changes any node replaces that root
// (and closes its channel), and the radix fork gives each root its own
// channel for life, so an equal channel means the very same nodes. The
// table's Raft index is not a key: one Raft entry may write the nodes table
// in several transactions at one index (a heartbeat-expiry batch marks each
// node down in its own), and a pass between two of them must not leave a
// list that is reused after the second.
type readyMemo struct {
	mu  sync.Mutex
	set *ReadyNodeSet
}

// ReadyNodes returns the nodes that may receive placements as of this
// store's (or snapshot's) nodes table. Heartbeats do not write nodes, so in
// steady state every evaluation shares one set instead of walking every
// node.
func (s *reader) ReadyNodes() (*ReadyNodeSet, error) {
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
	iter, err := txn.Get(tableNodes, "id")
	if err != nil {
		return nil, fmt.Errorf("state: listing nodes: %w", err)
	}
	version := iter.WatchCh()
	memo := s.ready
	if memo != nil {
		memo.mu.Lock()
		set := memo.set
		memo.mu.Unlock()
		if set != nil && set.version == version {
			return set, nil
		}
	}
	set := &ReadyNodeSet{Index: index, version: version}
	for obj := iter.Next(); obj != nil; obj = iter.Next() {
		if n, ok := obj.(*structs.Node); ok && n.Ready() {
			set.Nodes = append(set.Nodes, n)
		}
	}
	if memo != nil {
		memo.mu.Lock()
		switch {
		case memo.set != nil && memo.set.version == version:
			set = memo.set // computed concurrently: share one set
		case memo.set == nil || !memo.set.current():
			// Keep the newest: a late reader of an old snapshot must
			// not evict the set the current evaluations share.
			memo.set = set
		}
		memo.mu.Unlock()
	}
	return set, nil
}
