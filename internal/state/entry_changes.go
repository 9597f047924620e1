package state

import (
	"sync"

	"github.com/hashicorp/go-memdb"
)

// entryChanges gathers the changes every write transaction of the entry
// being applied committed, for the event stream (internal/events): the FSM
// turns collection on at the start of an entry and takes the changes at
// its end. The changes are memdb's own lists (computed anyway for the node
// watch), kept as they are: collecting costs one append per transaction.
type entryChanges struct {
	mu      sync.Mutex
	on      bool
	changes []memdb.Changes // one per committed transaction
}

func (c *entryChanges) add(cs memdb.Changes) {
	if len(cs) == 0 {
		return
	}
	c.mu.Lock()
	if c.on {
		c.changes = append(c.changes, cs)
	}
	c.mu.Unlock()
}

// CollectEntryChanges makes the store keep every change committed from now
// until TakeEntryChanges (the FSM calls it after BeginEntry).
func (s *StateStore) CollectEntryChanges() {
	c := s.db.entry
	if c == nil {
		return
	}
	c.mu.Lock()
	c.on = true
	c.changes = nil
	c.mu.Unlock()
}

// TakeEntryChanges stops collecting and returns what was committed since
// CollectEntryChanges: each transaction's changes, in commit order. The
// objects are the stored ones: read them, never change them.
func (s *StateStore) TakeEntryChanges() []memdb.Changes {
	c := s.db.entry
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.changes
	c.on = false
	c.changes = nil
	return out
}
