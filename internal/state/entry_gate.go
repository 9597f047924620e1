package state

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-memdb"
)

// One Raft entry may write the store in several transactions at one index:
// a job registration batch registers each job (and its evaluation) on its
// own, a heartbeat-expiry batch marks each node down on its own. A reader
// between two of them would see half an entry under the entry's index: a
// scheduler would place the first registration's version under the index
// the second one also carries (allocations of v1 that the reconciler then
// takes for v2), and a blocking query would answer X-Nomad-Index N for
// half of entry N, so the client's next ?index=N query would sleep through
// the rest of it.
//
// So the FSM brackets each entry with BeginEntry and EndEntry, and
// snapshots are taken only between entries: Snapshot (and so
// SnapshotMinIndex and every blocking query, which reads a snapshot) waits
// for the entry being applied, at most one entry's apply time. Direct
// writes outside an entry (tests, bulk restore) are not bracketed and
// visible at once, as before. Reads of the live store itself are not
// gated either: the write path's precondition checks, and the client's
// alloc pull (NodeClientAllocs), whose answer moves only with allocation
// writes, which every entry makes in one transaction.
//
// Never take a snapshot of a store from inside one of its entries (the
// FSM's apply or the sink it calls): it would wait for itself.

// entryGate tracks the entry being applied.
type entryGate struct {
	mu   sync.Mutex
	open bool
	wait *entryWait // the open entry's waiters, if any

	// waiting counts snapshots waiting for an entry (tests observe it).
	waiting atomic.Int64
}

// entryWait hands the waiters of one entry the database as of its end.
// Handing it over, rather than letting each waiter take its own after
// the entry, keeps a waiter from missing the gap between two entries
// under a steady stream of them.
type entryWait struct {
	done chan struct{}
	db   *memdb.MemDB // set before done is closed
}

// BeginEntry marks the start of the Raft entry at index: snapshots wait
// until EndEntry. Entries do not nest.
func (s *StateStore) BeginEntry(index uint64) {
	g := s.gate
	g.mu.Lock()
	g.open = true
	g.mu.Unlock()
}

// EndEntry marks the end of the entry begun last: its writes become
// visible to snapshots together.
func (s *StateStore) EndEntry() {
	g := s.gate
	g.mu.Lock()
	g.open = false
	if w := g.wait; w != nil {
		g.wait = nil
		w.db = s.db.MemDB.Snapshot()
		close(w.done)
	}
	g.mu.Unlock()
}

// EntryWaiters is the number of snapshots waiting for an entry to end.
func (s *StateStore) EntryWaiters() int { return int(s.gate.waiting.Load()) }

// snapshotDB returns a memdb snapshot of db taken between entries: at
// once if none is being applied, else the one taken at its end.
func (g *entryGate) snapshotDB(db *memdb.MemDB) *memdb.MemDB {
	g.mu.Lock()
	if !g.open {
		defer g.mu.Unlock()
		return db.Snapshot()
	}
	w := g.wait
	if w == nil {
		w = &entryWait{done: make(chan struct{})}
		g.wait = w
	}
	g.mu.Unlock()
	g.waiting.Add(1)
	<-w.done
	g.waiting.Add(-1)
	return w.db
}
