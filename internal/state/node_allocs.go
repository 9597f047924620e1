package state

import (
	"fmt"
	"sync"

	"github.com/drover-project/drover/internal/structs"
)

// LiveAllocs are the non-terminal allocations of one node as of one
// version of the allocs table. They are shared read-only by every snapshot
// in which the node's allocations did not change, so evaluations at
// different indexes do not re-read (or re-sum) untouched nodes.
type LiveAllocs struct {
	// Allocs are the allocations, in index order. Never modify them.
	Allocs []*structs.Allocation

	// version is the watch channel of the node's subtree in the allocs
	// table's node_terminal index (read by the node's exact key prefix):
	// go-memdb copies a radix node, with a new channel, whenever anything
	// under it changes, so an equal channel means equal allocations. (The
	// string prefix is cheaper to build per lookup than the compound key;
	// terminal allocations are dropped while collecting.)
	version <-chan struct{}

	once  sync.Once
	usage structs.AllocsUsage
}

// Usage sums the allocations (what they hold on the node), computed once
// for these allocations and shared read-only: the scheduler's fit checks
// and the plan applier's verification start from it.
func (l *LiveAllocs) Usage() structs.AllocsUsage {
	l.once.Do(func() { l.usage = structs.SumAllocs(l.Allocs) })
	return l.usage
}

// liveAllocsMemo holds the newest LiveAllocs read per node; the store and
// its snapshots share it.
type liveAllocsMemo struct {
	mu     sync.Mutex
	byNode map[string]*LiveAllocs
}

// maxLiveAllocsMemo bounds the memo (node IDs of deleted nodes linger
// until it is cleared).
const maxLiveAllocsMemo = 1 << 17

// LiveAllocsByNodeReader returns a function that lists the allocations of
// a node that are not terminal (as AllocsByNodeTerminal(nil, id, false)),
// all read from one read transaction opened now. A scheduling pass looks
// at thousands of nodes of one snapshot: opening a transaction per node
// cost more than the lookup, and a node whose allocations did not change
// since any evaluation last read it is served from the store's memo. The
// function is not safe for concurrent use and registers no watches.
func (s *StateStore) LiveAllocsByNodeReader() func(nodeID string) (*LiveAllocs, error) {
	txn := s.db.Txn(false)
	memo := s.liveAllocs
	return func(nodeID string) (*LiveAllocs, error) {
		iter, err := txn.Get(tableAllocs, "node_terminal_prefix", nodeKeyPrefix(nodeID))
		if err != nil {
			return nil, fmt.Errorf("state: %s lookup: %w", tableAllocs, err)
		}
		version := iter.WatchCh()
		if memo != nil {
			memo.mu.Lock()
			have := memo.byNode[nodeID]
			memo.mu.Unlock()
			if have != nil && have.version == version {
				return have, nil
			}
		}
		live := collectAllocs(iter, func(a *structs.Allocation) bool { return !a.TerminalStatus() })
		la := &LiveAllocs{Allocs: live, version: version}
		if memo != nil {
			memo.mu.Lock()
			if memo.byNode == nil || len(memo.byNode) >= maxLiveAllocsMemo {
				memo.byNode = make(map[string]*LiveAllocs)
			}
			memo.byNode[nodeID] = la
			memo.mu.Unlock()
		}
		return la, nil
	}
}
