package state

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unique"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// LiveAllocs are the non-terminal allocations of one node as of one
// version of the allocs table. They are shared read-only by every snapshot
// in which the node's allocations did not change, so evaluations at
// different indexes do not re-read (or re-sum) untouched nodes.
type LiveAllocs struct {
	// Allocs are the allocations, in index order (by ID). Never modify
	// them.
	Allocs []*structs.Allocation

	// usage is Usage's result once known: summed on first use, or carried
	// over by the write that derived these allocations from others whose
	// sum it already had (nodeAllocsMemo.prepare).
	usage atomic.Pointer[structs.AllocsUsage]

	// groups are the allocations' groups once CountGroup first needed
	// them, in Allocs' order.
	groups atomic.Pointer[[]unique.Handle[AllocGroup]]
}

// Usage sums the allocations (what they hold on the node), computed once
// for these allocations and shared read-only: the scheduler's fit checks
// and the plan applier's verification start from it. (Two first callers
// racing may both sum; they store equal values.)
func (l *LiveAllocs) Usage() structs.AllocsUsage {
	if u := l.usage.Load(); u != nil {
		return *u
	}
	u := structs.SumAllocs(l.Allocs)
	l.usage.Store(&u)
	return u
}

// nodeAllocs are all allocations of one node as of one version of the
// allocs table, with what the scheduler and the node's client read of
// them. Shared read-only through nodeAllocsMemo.
type nodeAllocs struct {
	// version is the watch channel of the node's subtree in the allocs
	// table's node_terminal index (read by the node's exact key prefix,
	// nodeKeyPrefix): go-memdb copies a radix node whenever anything under
	// it changes, and our radix fork gives every node its own channel for
	// life, closed once a committed write replaced the node. So an equal
	// channel means equal allocations, and an open one means the version
	// is the newest committed.
	version <-chan struct{}

	// all are the allocations in index order: the live ones by ID, then
	// the terminal ones by ID; live is the live prefix.
	all  []*structs.Allocation
	live LiveAllocs

	// pull is what the client's view needs beyond all, computed on first
	// use or carried over by a write that left it unchanged.
	pull atomic.Pointer[nodePull]

	// stamp is the range of snapshots these allocations are right for,
	// by alloc-write number (node_allocs_seq.go).
	stamp seqRange
}

// nodePull is what a client pull answers from a node's allocations
// beyond the allocations themselves: the answer's table (alloc ID ->
// AllocModifyIndex) is encoded straight from all
// (structs.NodeClientAllocsResponse.SetAllocsOf), not kept as a map.
type nodePull struct {
	// max is the highest AllocModifyIndex (0 with no allocations).
	max uint64
}

func newNodeAllocs(version <-chan struct{}, all []*structs.Allocation) *nodeAllocs {
	n := 0
	for n < len(all) && !all[n].TerminalStatus() {
		n++
	}
	v := &nodeAllocs{version: version, all: all}
	v.live.Allocs = all[:n:n]
	return v
}

func (v *nodeAllocs) clientView() *nodePull {
	if p := v.pull.Load(); p != nil {
		return p
	}
	p := &nodePull{}
	for _, a := range v.all {
		p.max = max(p.max, a.AllocModifyIndex)
	}
	v.pull.Store(p)
	return p
}

// current reports whether the version is the newest committed one (its
// radix node was not replaced since).
func (v *nodeAllocs) current() bool {
	select {
	case <-v.version:
		return false
	default:
		return true
	}
}

// nodeAllocsMemo holds, per node, the allocations of the newest version
// anyone read or wrote; the store and its snapshots share it. Readers
// fill it on a miss (read); the store's alloc writes derive each touched
// node's new entry from its current one (prepare, publish), so a node
// whose allocations a write changed is not re-read from the radix tree by
// the next scheduling pass or pull.
type nodeAllocsMemo struct {
	mu     sync.Mutex
	byNode map[string]*nodeAllocs

	// lastWrite is the number of the newest write to each node's
	// allocations; forgotAt the newest number when it was last cleared
	// (node_allocs_seq.go).
	lastWrite map[string]uint64
	forgotAt  uint64
	// bypassed counts alloc writes that were not numbered (unnumbered).
	bypassed atomic.Uint64
}

// maxNodeAllocsMemo bounds the memo (node IDs of deleted nodes linger
// until it is cleared).
const maxNodeAllocsMemo = 1 << 17

func (m *nodeAllocsMemo) get(nodeID string) *nodeAllocs {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byNode[nodeID]
}

// putLocked stores v unless the entry there is current: a reader of an
// older snapshot does not displace the newest version.
func (m *nodeAllocsMemo) putLocked(nodeID string, v *nodeAllocs) {
	if have := m.byNode[nodeID]; have != nil && have != v && have.current() {
		return
	}
	if m.byNode == nil || len(m.byNode) >= maxNodeAllocsMemo {
		m.byNode = make(map[string]*nodeAllocs)
	}
	m.byNode[nodeID] = v
}

// read returns nodeID's allocations as txn sees them, seq being the number
// of txn's newest alloc write (readAllocSeq): the memo's entry when its
// range holds seq (no lookup, see node_allocs_seq.go) or its version is
// the one txn sees, else collected, memoised and stamped for later
// readers. m may be nil (then nothing is memoised).
func (m *nodeAllocsMemo) read(txn *memdb.Txn, nodeID string, seq uint64) (*nodeAllocs, error) {
	if v := m.fresh(nodeID, seq); v != nil {
		return v, nil
	}
	iter, err := txn.Get(tableAllocs, "node_terminal_prefix", nodeKeyPrefix(nodeID))
	if err != nil {
		return nil, fmt.Errorf("state: %s lookup: %w", tableAllocs, err)
	}
	version := iter.WatchCh()
	if m == nil {
		return newNodeAllocs(version, collectAllocs(iter, nil)), nil
	}
	if have := m.get(nodeID); have != nil && have.version == version {
		return have, nil
	}
	v := newNodeAllocs(version, collectAllocs(iter, nil))
	m.mu.Lock()
	m.stampLocked(nodeID, v, seq)
	m.putLocked(nodeID, v)
	m.mu.Unlock()
	return v, nil
}

// LiveAllocsByNodeReader returns a function that lists the allocations of
// a node that are not terminal (as AllocsByNodeTerminal(nil, id, false)),
// all read from one read transaction opened now. A scheduling pass looks
// at thousands of nodes of one snapshot: opening a transaction per node
// cost more than the lookup, and a node whose allocations did not change
// since any evaluation last read them, or that the store's writes kept
// current in the memo, is served from the memo. The function is not safe
// for concurrent use and registers no watches.
func (s *reader) LiveAllocsByNodeReader() func(nodeID string) (*LiveAllocs, error) {
	txn := s.db.Txn(false)
	memo := s.nodeAllocs
	seq := readAllocSeq(txn)
	return func(nodeID string) (*LiveAllocs, error) {
		v, err := memo.read(txn, nodeID, seq)
		if err != nil {
			return nil, err
		}
		return &v.live, nil
	}
}

// nodeAllocsUpdate is a touched node's new memo entry, derived before a
// write commits and published after.
type nodeAllocsUpdate struct {
	nodeID string
	old    *nodeAllocs
	new    *nodeAllocs
}

// allocChange is one allocation's net change in a write (before or after
// is nil when it was created or deleted).
type allocChange struct{ before, after *structs.Allocation }

// prepare derives, for every node whose allocations txn changed and whose
// memo entry is current, the node's entry as of txn's writes: the old
// allocations with the written ones replaced, added or removed, keeping
// index order, and the new version channel, read by one prefix seek in
// txn (the radix nodes txn made are the ones it commits). Call it after
// the transaction's last write and right before its Commit, then publish
// the result after. Nodes without a current entry are left to readers.
//
// A current entry's channel is open before the commit: the check costs
// no lookup in the old tree. The usage sum is carried over when the write
// cannot have changed it (client status updates that leave allocations
// live and their resources alone) or only added live allocations (then
// they are added to it); the pull view when no AllocModifyIndex changed
// and no allocation came or went. Anything else is computed when first
// read, from the entry's slice.
func (m *nodeAllocsMemo) prepare(db txnDB, txn *memdb.Txn, seq uint64) []nodeAllocsUpdate {
	if m == nil {
		return nil
	}
	byNode := map[string][]allocChange{}
	var order []string
	touch := func(nodeID string, c allocChange) {
		cs, ok := byNode[nodeID]
		if !ok {
			order = append(order, nodeID)
		}
		byNode[nodeID] = append(cs, c)
	}
	for _, c := range db.changes(txn) {
		if c.Table != tableAllocs {
			continue
		}
		before, _ := c.Before.(*structs.Allocation)
		after, _ := c.After.(*structs.Allocation)
		switch {
		case before != nil && after != nil && before.NodeID != after.NodeID:
			touch(before.NodeID, allocChange{before: before})
			touch(after.NodeID, allocChange{after: after})
		case before != nil:
			touch(before.NodeID, allocChange{before: before, after: after})
		case after != nil:
			touch(after.NodeID, allocChange{after: after})
		}
	}
	olds := make([]*nodeAllocs, len(order))
	m.mu.Lock()
	for i, nodeID := range order {
		m.noteWriteLocked(nodeID, seq)
		olds[i] = m.byNode[nodeID]
	}
	m.mu.Unlock()
	var out []nodeAllocsUpdate
	for i, nodeID := range order {
		old := olds[i]
		if old == nil || !old.current() {
			continue
		}
		next := deriveNodeAllocs(old, byNode[nodeID])
		if next == nil {
			continue
		}
		iter, err := txn.Get(tableAllocs, "node_terminal_prefix", nodeKeyPrefix(nodeID))
		if err != nil {
			continue
		}
		next.version = iter.WatchCh()
		out = append(out, nodeAllocsUpdate{nodeID: nodeID, old: old, new: next})
	}
	return out
}

// deriveNodeAllocs applies changes (all of one node, each allocation at
// most once) to old's allocations; nil if they do not fit old (never
// expected: then the node is left to readers). Each change costs a binary
// search in its segment (live or terminal, each by ID) and a copy of the
// slice's tail: the index order is kept without sorting.
func deriveNodeAllocs(old *nodeAllocs, changes []allocChange) *nodeAllocs {
	all := make([]*structs.Allocation, len(old.all), len(old.all)+len(changes))
	copy(all, old.all)
	nLive := len(old.live.Allocs)
	// groups follows all when old's live groups are known (terminal
	// places hold zero handles): the allocations a write adds are at hand
	// here, while the next reader would load every allocation of the node.
	var groups []unique.Handle[AllocGroup]
	if g := old.live.groups.Load(); g != nil {
		groups = make([]unique.Handle[AllocGroup], len(all), cap(all))
		copy(groups, *g)
	}
	// find returns where id sorts in the live or terminal segment.
	find := func(id string, live bool) (int, bool) {
		lo, hi := nLive, len(all)
		if live {
			lo, hi = 0, nLive
		}
		i, ok := slices.BinarySearchFunc(all[lo:hi], id, func(a *structs.Allocation, id string) int {
			return strings.Compare(a.ID, id)
		})
		return lo + i, ok
	}
	sameUsage, addUsage := true, true // usage unchanged; or only live allocations added
	samePull := true
	for _, c := range changes {
		liveBefore := c.before != nil && !c.before.TerminalStatus()
		liveAfter := c.after != nil && !c.after.TerminalStatus()
		if liveBefore != liveAfter || liveBefore && c.before.AllocatedResources != c.after.AllocatedResources {
			sameUsage = false
		}
		if c.before != nil || !liveAfter {
			addUsage = false
		}
		if c.before == nil || c.after == nil || c.before.AllocModifyIndex != c.after.AllocModifyIndex {
			samePull = false
		}
		if c.before != nil {
			i, ok := find(c.before.ID, liveBefore)
			if !ok || all[i] != c.before {
				return nil
			}
			if c.after != nil && liveBefore == liveAfter {
				all[i] = c.after // same place in the index
				if groups != nil && liveAfter {
					groups[i] = GroupOf(c.after)
				}
				continue
			}
			all = slices.Delete(all, i, i+1)
			if groups != nil {
				groups = slices.Delete(groups, i, i+1)
			}
			if liveBefore {
				nLive--
			}
		}
		if c.after != nil {
			i, ok := find(c.after.ID, liveAfter)
			if ok {
				return nil
			}
			all = slices.Insert(all, i, c.after)
			if groups != nil {
				var g unique.Handle[AllocGroup]
				if liveAfter {
					g = GroupOf(c.after)
				}
				groups = slices.Insert(groups, i, g)
			}
			if liveAfter {
				nLive++
			}
		}
	}
	next := &nodeAllocs{all: all}
	next.live.Allocs = all[:nLive:nLive]
	if groups != nil {
		live := groups[:nLive:nLive]
		next.live.groups.Store(&live)
	}
	if u := old.live.usage.Load(); u != nil {
		switch {
		case sameUsage:
			next.live.usage.Store(u)
		case addUsage:
			sum := *u
			for _, c := range changes {
				sum.Add(c.after)
			}
			next.live.usage.Store(&sum)
		}
	}
	if p := old.pull.Load(); p != nil && samePull {
		next.pull.Store(p)
	}
	return next
}

// publish stores the entries prepare derived, once the write committed.
// An entry replaced meanwhile by a reader of the new version (equal
// contents) or of an older one is overwritten unless current; one whose
// version a later write already replaced is stored all the same and
// simply never matches.
func (m *nodeAllocsMemo) publish(updates []nodeAllocsUpdate, seq uint64) {
	if len(updates) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, u := range updates {
		m.stampLocked(u.nodeID, u.new, seq)
		if have := m.byNode[u.nodeID]; have == u.old || have == nil || !have.current() {
			m.byNode[u.nodeID] = u.new
		}
	}
}

// commitAllocs commits a write transaction that changed allocations,
// keeping the memo's entries of the touched nodes current.
//
// The write is numbered first (node_allocs_seq.go): the number is stored
// in txn and marks the touched nodes' entries before the commit.
func (s *StateStore) commitAllocs(txn *memdb.Txn) {
	seq, err := nextAllocSeq(txn)
	if err != nil {
		// Not expected (a fixed schema). Commit unnumbered: the memo
		// then stops trusting numbers (unnumbered, from the commit hook).
		txn.Commit()
		return
	}
	updates := s.nodeAllocs.prepare(s.db, txn, seq)
	txn.Commit()
	s.nodeAllocs.publish(updates, seq)
}
