package state

import (
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/go-memdb"
)

// A scheduling pass reads thousands of nodes' allocations from one
// snapshot, and checking a memo entry's version costs a prefix seek in the
// allocs table's largest index (nodeAllocsMemo.read) — more than the rest
// of the read. Write sequence numbers let a reader skip the seek.
//
// Every write that changes allocations (commitAllocs) takes the next
// number in the alloc_seq table, in the same transaction, so a snapshot
// knows the number of the newest alloc write it sees. Before the write
// commits, the memo records it for every node it touches and closes the
// range of the node's entry (seqRange.until); after, it stamps the entry it
// derived with the write's number. An entry stamped [from, until) holds
// the node's allocations for every snapshot numbered in that range, and a
// reader that finds its number in range uses the entry as is
// (nodeAllocsMemo.fresh). Anything unknown leaves an entry unstamped, and
// it is then only used through the version check.

// tableAllocSeq holds one allocSeq row.
const tableAllocSeq = "alloc_seq"

// allocSeq is the number of the newest write that changed allocations.
type allocSeq struct{ Value uint64 }

func allocSeqTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: tableAllocSeq, Indexes: map[string]*memdb.IndexSchema{
		"id": {Name: "id", Unique: true,
			Indexer: &memdb.ConditionalIndex{Conditional: func(any) (bool, error) { return true, nil }}},
	}}
}

// readAllocSeq returns the number of the newest alloc write txn sees (0:
// none since the store was made or restored).
func readAllocSeq(txn *memdb.Txn) uint64 {
	raw, err := txn.First(tableAllocSeq, "id")
	if err != nil || raw == nil {
		return 0
	}
	return raw.(*allocSeq).Value
}

// nextAllocSeq numbers txn's write: the next number, stored in txn.
func nextAllocSeq(txn *memdb.Txn) (uint64, error) {
	seq := readAllocSeq(txn) + 1
	if err := txn.Insert(tableAllocSeq, &allocSeq{Value: seq}); err != nil {
		return 0, fmt.Errorf("state: numbering an alloc write: %w", err)
	}
	return seq, nil
}

// seqRange is the range of alloc-write numbers [from, until) of the
// snapshots an entry is right for: from is set (with valid) before the
// entry is stored and never changes; until is 0 until a write touches the
// node, which then sets it once, before it commits.
type seqRange struct {
	valid bool
	from  uint64
	until atomic.Uint64
}

// covers reports whether a snapshot numbered seq sees these allocations.
func (r *seqRange) covers(seq uint64) bool {
	if !r.valid || seq < r.from {
		return false
	}
	u := r.until.Load()
	return u == 0 || seq < u
}

// fresh returns the entry of nodeID when it is right for a snapshot
// numbered seq; nil when that is not known (then read checks the version).
func (m *nodeAllocsMemo) fresh(nodeID string, seq uint64) *nodeAllocs {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	v := m.byNode[nodeID]
	m.mu.Unlock()
	if v == nil || !v.stamp.covers(seq) {
		return nil
	}
	return v
}

// noteWriteLocked records that the write numbered seq changes nodeID's
// allocations and closes the range of its entry. Called before the write
// commits, so no snapshot that sees the write can find the entry in range.
func (m *nodeAllocsMemo) noteWriteLocked(nodeID string, seq uint64) {
	if v := m.byNode[nodeID]; v != nil {
		v.stamp.until.CompareAndSwap(0, seq)
	}
	if m.lastWrite == nil || len(m.lastWrite) >= maxNodeAllocsMemo {
		// Forget (the IDs of removed nodes linger): a node missing from
		// the map may have been written at any number up to seq.
		m.lastWrite = make(map[string]uint64)
		m.forgotAt = max(m.forgotAt, seq)
	}
	m.lastWrite[nodeID] = seq
}

// settledLocked reports whether nodeID's allocations have not been
// written since the snapshot numbered seq: what a reader collected there
// is then the newest, and right from seq on until the next write.
func (m *nodeAllocsMemo) settledLocked(nodeID string, seq uint64) bool {
	if w, ok := m.lastWrite[nodeID]; ok {
		return w <= seq
	}
	return m.forgotAt <= seq
}

// stampLocked stamps v, collected from a snapshot numbered seq, if nothing
// wrote the node since.
func (m *nodeAllocsMemo) stampLocked(nodeID string, v *nodeAllocs, seq uint64) {
	if !v.stamp.valid && m.settledLocked(nodeID, seq) {
		v.stamp.valid, v.stamp.from = true, seq
	}
}

// restoring numbers a bulk load (StateRestore) as one write that touches
// every node: every entry's range is closed at seq before the load
// commits, and what readers collect is stamped only from seq on.
func (m *nodeAllocsMemo) restoring(seq uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.byNode {
		v.stamp.until.CompareAndSwap(0, seq)
	}
	m.lastWrite = nil
	m.forgotAt = max(m.forgotAt, seq)
}

// unnumbered handles a committed write that changed allocations without
// commitAllocs (a bug: every alloc write must number itself). Its changes
// are in snapshots no number tells apart, so every entry is dropped and
// nothing is stamped until the next numbered write. The count lets tests
// catch such a writer.
func (m *nodeAllocsMemo) unnumbered(currentSeq uint64) {
	m.bypassed.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byNode = make(map[string]*nodeAllocs)
	m.lastWrite = nil
	m.forgotAt = currentSeq + 1
}

// allocsUnnumbered reports whether a committed write changed allocations
// without numbering itself.
func allocsUnnumbered(changes memdb.Changes) bool {
	allocs := false
	for _, c := range changes {
		switch c.Table {
		case tableAllocSeq:
			return false
		case tableAllocs:
			allocs = true
		}
	}
	return allocs
}
