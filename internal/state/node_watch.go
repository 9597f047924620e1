package state

import (
	"sync"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// txnDB is the store's memdb. Its write transactions record their changes
// so that, once committed, the nodes whose allocations changed in a way the
// client acts on are woken (nodeWatch). Read transactions and snapshots are
// plain memdb.
type txnDB struct {
	*memdb.MemDB
	watch *nodeWatch // nil on snapshots
}

// Txn starts a transaction; see txnDB.
func (d txnDB) Txn(write bool) *memdb.Txn {
	txn := d.MemDB.Txn(write)
	if write && d.watch != nil {
		txn.TrackChanges()
		// Deferred functions run after the new root is visible, so a woken
		// reader sees the write that woke it.
		txn.Defer(func() { d.watch.committed(txn.Changes()) })
	}
	return txn
}

// nodeWatch wakes a node's parked alloc pull (Node.GetClientAllocs) only
// when something that node's client must act on changes: an allocation
// placed on it, a server-side change to one of its allocations (every such
// write moves AllocModifyIndex: desired status, transitions, job, lost or
// unknown), an allocation deleted (GC), or the node itself registered or
// removed. A client's own status update (which moves only ModifyIndex) and
// writes to other nodes wake nobody, and a node nobody waits for costs one
// map lookup per changed allocation.
type nodeWatch struct {
	mu      sync.Mutex
	waiters map[string]chan struct{} // node ID -> closed on the next change
}

func newNodeWatch() *nodeWatch { return &nodeWatch{waiters: map[string]chan struct{}{}} }

// ch returns the channel closed at the node's next client-visible change.
// Take it before reading, so a change committed in between is not missed.
func (w *nodeWatch) ch(nodeID string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.waiters[nodeID]
	if c == nil {
		c = make(chan struct{})
		w.waiters[nodeID] = c
	}
	return c
}

func (w *nodeWatch) committed(changes memdb.Changes) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.waiters) == 0 {
		return
	}
	for _, c := range changes {
		switch c.Table {
		case tableAllocs:
			before, _ := c.Before.(*structs.Allocation)
			after, _ := c.After.(*structs.Allocation)
			switch {
			case before == nil && after != nil:
				w.wakeLocked(after.NodeID)
			case after == nil && before != nil:
				w.wakeLocked(before.NodeID)
			case before != nil && after != nil:
				if before.AllocModifyIndex != after.AllocModifyIndex || before.NodeID != after.NodeID {
					w.wakeLocked(before.NodeID)
					w.wakeLocked(after.NodeID)
				}
			}
		case tableNodes:
			// A registered or removed node answers differently (404).
			if c.Created() {
				w.wakeLocked(c.After.(*structs.Node).ID)
			} else if c.Deleted() {
				w.wakeLocked(c.Before.(*structs.Node).ID)
			}
		}
	}
}

func (w *nodeWatch) wakeLocked(nodeID string) {
	if c, ok := w.waiters[nodeID]; ok {
		close(c)
		delete(w.waiters, nodeID)
	}
}

// NodeAllocsWatchCh returns a channel closed when nodeID's allocations next
// change in a way its client acts on (see nodeWatch): placed, changed
// server-side (AllocModifyIndex moves), deleted; or when the node is
// registered or removed. Client status updates do not close it. Add it to a
// blocking query's watch set before reading. On a snapshot, which never
// changes, it is nil.
func (s *StateStore) NodeAllocsWatchCh(nodeID string) <-chan struct{} {
	if s.db.watch == nil {
		return nil
	}
	return s.db.watch.ch(nodeID)
}
