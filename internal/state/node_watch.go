package state

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// txnDB is the store's memdb. Its write transactions record their changes
// so that, once committed, the nodes whose allocations changed in a way the
// client acts on are woken (nodeWatch). Read transactions and snapshots are
// plain memdb.
type txnDB struct {
	*memdb.MemDB
	watch *nodeWatch      // nil on snapshots
	memo  *nodeAllocsMemo // checks that alloc writes are numbered
	entry *entryChanges   // the entry's changes for the event stream; nil on snapshots
	// readOnly is set on snapshots: a write transaction there is a bug
	// (StateSnapshot has no write method; this catches a read method that
	// writes).
	readOnly bool
}

// Txn starts a transaction; see txnDB.
func (d txnDB) Txn(write bool) *memdb.Txn {
	if write && d.readOnly {
		panic("state: write transaction on a read-only snapshot")
	}
	txn := d.MemDB.Txn(write)
	if write && d.watch != nil {
		txn.TrackChanges()
		// Deferred functions run after the new root is visible, so a woken
		// reader sees the write that woke it.
		txn.Defer(func() {
			cs := d.watch.changesOf(txn)
			d.watch.committed(cs)
			if d.entry != nil {
				d.entry.add(cs)
			}
			if d.memo != nil && allocsUnnumbered(cs) {
				d.memo.unnumbered(readAllocSeq(d.MemDB.Txn(false)))
			}
		})
	}
	return txn
}

// changes returns the changes of txn, a write transaction of this store
// about to commit, and keeps them for its deferred nodeWatch call:
// memdb.Txn.Changes de-duplicates into a fresh map on every call, and the
// alloc writes' memo hook (nodeAllocsMemo.prepare) reads them too. Nil
// when changes are not tracked (snapshots never write).
func (d txnDB) changes(txn *memdb.Txn) memdb.Changes {
	if d.watch == nil {
		return nil
	}
	cs := txn.Changes()
	d.watch.last.Store(&txnChanges{txn: txn, changes: cs})
	return cs
}

// txnChanges are a write transaction's changes, computed before its commit.
type txnChanges struct {
	txn     *memdb.Txn
	changes memdb.Changes
}

// changesOf returns txn's changes, computed afresh unless changes kept
// them. (Deferred functions run after memdb released the writer lock, so
// the next writer may have replaced them meanwhile; then they are
// recomputed.)
func (w *nodeWatch) changesOf(txn *memdb.Txn) memdb.Changes {
	if p := w.last.Load(); p != nil && p.txn == txn {
		w.last.CompareAndSwap(p, nil)
		return p.changes
	}
	return txn.Changes()
}

// nodeWatch wakes a node's parked alloc pull (Node.GetClientAllocs) only
// when something that node's client must act on changes: an allocation
// placed on it, a server-side change to one of its allocations (every such
// write moves AllocModifyIndex: desired status, transitions, job, lost or
// unknown), an allocation deleted (GC), or the node itself registered,
// removed or given a new secret. A client's own status update (which moves only ModifyIndex) and
// writes to other nodes wake nobody; each changed allocation costs one map
// lookup.
//
// It also remembers, per node, the pull index its last pull computed, valid
// until the node's next change, so a pull that arrives already up to date
// can park without reading the store at all.
type nodeWatch struct {
	mu    sync.Mutex
	nodes map[string]*nodeWatchEntry

	// last are the changes txnDB.changes computed for the transaction
	// committing now.
	last atomic.Pointer[txnChanges]
}

type nodeWatchEntry struct {
	ch     chan struct{} // closed at the next change; nil until someone waits
	gen    uint64        // bumped at every change
	known  bool          // index and secret are those of generation gen
	index  uint64
	secret string
}

// NodePull is a pull's view of its node's watch: Ch is closed at the node's
// next client-visible change. When Known, nothing changed since a pull
// answered Index to a client presenting SecretID.
type NodePull struct {
	Ch       <-chan struct{}
	Known    bool
	Index    uint64
	SecretID string

	gen uint64
}

func newNodeWatch() *nodeWatch { return &nodeWatch{nodes: map[string]*nodeWatchEntry{}} }

func (w *nodeWatch) pull(nodeID string) NodePull {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.nodes[nodeID]
	if e == nil {
		e = &nodeWatchEntry{}
		w.nodes[nodeID] = e
	}
	if e.ch == nil {
		e.ch = make(chan struct{})
	}
	return NodePull{Ch: e.ch, Known: e.known, Index: e.index, SecretID: e.secret, gen: e.gen}
}

func (w *nodeWatch) remember(nodeID string, p NodePull, index uint64, secret string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.nodes[nodeID]; e != nil && e.gen == p.gen {
		e.known, e.index, e.secret = true, index, secret
	}
}

func (w *nodeWatch) committed(changes memdb.Changes) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.nodes) == 0 {
		return
	}
	for _, c := range changes {
		switch c.Table {
		case tableAllocs:
			before, _ := c.Before.(*structs.Allocation)
			after, _ := c.After.(*structs.Allocation)
			switch {
			case before == nil && after != nil:
				w.changedLocked(after.NodeID)
			case after == nil && before != nil:
				w.changedLocked(before.NodeID)
			case before != nil && after != nil:
				if before.AllocModifyIndex != after.AllocModifyIndex || before.NodeID != after.NodeID {
					w.changedLocked(before.NodeID)
					w.changedLocked(after.NodeID)
				}
			}
		case tableNodes:
			// A registered or removed node answers differently (404), and
			// one whose secret changed refuses the old one (403): a
			// remembered answer, which holds the secret it was given for,
			// must not let a pull presenting the old one park.
			switch {
			case c.Created():
				w.changedLocked(c.After.(*structs.Node).ID)
			case c.Deleted():
				id := c.Before.(*structs.Node).ID
				w.changedLocked(id)
				delete(w.nodes, id)
			case c.Before.(*structs.Node).SecretID != c.After.(*structs.Node).SecretID:
				w.changedLocked(c.After.(*structs.Node).ID)
			}
		}
	}
}

func (w *nodeWatch) changedLocked(nodeID string) {
	e := w.nodes[nodeID]
	if e == nil {
		return
	}
	e.gen++
	e.known = false
	if e.ch != nil {
		close(e.ch)
		e.ch = nil
	}
}

// NodePullWatch is the start of a node's alloc pull: take it before reading
// (so a change committed meanwhile closes Ch), then either park on Ch if
// Known shows nothing new, or read and call NodePullAnswered. See nodeWatch
// for what counts as a change. On a Scratch copy, which has no node watch,
// Ch is nil and nothing is Known. (Snapshots, which never change, have no
// such method.)
func (s *StateStore) NodePullWatch(nodeID string) NodePull {
	if s.db.watch == nil {
		return NodePull{}
	}
	return s.db.watch.pull(nodeID)
}

// NodePullAnswered records the index a pull computed for a client presenting
// secret, unless the node changed since p was taken.
func (s *StateStore) NodePullAnswered(nodeID string, p NodePull, index uint64, secret string) {
	if s.db.watch != nil {
		s.db.watch.remember(nodeID, p, index, secret)
	}
}
