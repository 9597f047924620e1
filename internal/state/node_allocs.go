package state

import (
	"fmt"

	"github.com/drover-project/drover/internal/structs"
)

// LiveAllocsByNodeReader returns a function that lists the allocations of
// a node that are not terminal (as AllocsByNodeTerminal(nil, id, false)),
// all read from one read transaction opened now. A scheduling pass looks
// at thousands of nodes of one snapshot, and opening a transaction per
// node cost more than the lookup. The function is not safe for concurrent
// use and registers no watches.
func (s *StateStore) LiveAllocsByNodeReader() func(nodeID string) ([]*structs.Allocation, error) {
	txn := s.db.Txn(false)
	return func(nodeID string) ([]*structs.Allocation, error) {
		iter, err := txn.Get(tableAllocs, "node_terminal", nodeID, false)
		if err != nil {
			return nil, fmt.Errorf("state: %s lookup: %w", tableAllocs, err)
		}
		return collectAllocs(iter, nil), nil
	}
}
