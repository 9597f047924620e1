package fsm

import (
	"unique"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// nodeRef is the copy of a node's ID and name that the allocations of a
// compacted entry share: the stored node's own strings when the node is
// known.
type nodeRef struct{ id, name string }

// nodeStrings points *id, and *name unless name is nil, at the shared
// copies of a node ID and the name of that node: the strings of the
// stored node, which live exactly as long as something uses them (the
// node, or an allocation placed on it or scoring it). A node is looked up
// in the store once (FSM.nodeStrs remembers it across entries, a restore
// per batch of allocations); its allocations and the scored nodes of
// their metrics then cost a map lookup each.
//
// It replaces interning every node ID with unique.Make(s).Value(): the
// unique map holds its entry only as long as some Handle is alive, and
// the string copied out of one keeps none alive, so the entry was dropped
// at the next GC and the next entry's allocations got a fresh copy of
// each node's ID (and paid for a new unique entry, weak pointer included).
// unique remains the fallback for nodes the store does not know, and for
// a name that is not the stored node's.
func (c *compactor) nodeStrings(id, name *string) {
	if *id == "" {
		if name != nil && *name != "" {
			*name = internNodeString(*name)
		}
		return
	}
	r, ok := c.known[*id]
	if !ok {
		r, ok = c.nodes[*id]
	}
	if !ok {
		r = c.lookupNode(*id)
	}
	*id = r.id
	if name == nil || *name == "" {
		return
	}
	if *name == r.name {
		*name = r.name
		return
	}
	// Not the stored node's name (an unknown node, or one renamed since
	// the placement was planned): rare.
	*name = internNodeString(*name)
}

// lookupNode returns the strings of the stored node with ID id, and
// remembers them in known (if any: across entries, else in nodes), or id
// interned with unique when there is no such node, remembered in nodes
// for this entry only.
func (c *compactor) lookupNode(id string) nodeRef {
	if c.storedNode != nil {
		if n := c.storedNode(id); n != nil && n.ID == id {
			r := nodeRef{id: n.ID, name: n.Name}
			if c.known != nil {
				c.known[r.id] = r
			} else {
				c.remember(r)
			}
			return r
		}
	}
	r := nodeRef{id: internNodeString(id)}
	c.remember(r)
	return r
}

func (c *compactor) remember(r nodeRef) {
	if c.nodes == nil {
		c.nodes = map[string]nodeRef{}
	}
	c.nodes[r.id] = r
}

// nodeSource is where a plan entry's compaction finds stored nodes'
// strings: known, remembered from earlier entries (and added to), then
// stored, a lookup in the store.
type nodeSource struct {
	known  map[string]nodeRef
	stored func(id string) *structs.Node
}

// maxKnownNodeStrings bounds FSM.nodeStrs (nodes deregistered without
// their entries dropped, if any, linger until it is cleared).
const maxKnownNodeStrings = 1 << 17

// knownNodeStrings returns the node source of a plan entry's compaction:
// the FSM's node strings and a reader of st.
func (f *FSM) knownNodeStrings(st *state.StateStore) *nodeSource {
	if f.nodeStrs == nil || len(f.nodeStrs) >= maxKnownNodeStrings {
		f.nodeStrs = map[string]nodeRef{}
	}
	return &nodeSource{known: f.nodeStrs, stored: st.NodeReader()}
}

// keepNodeStrings points a re-registered node's ID, and its name if
// unchanged, at those of its stored version ex: the allocations placed on
// the node hold them (see nodeStrings), and a new copy with every
// re-registration would leave each generation of allocations its own.
func keepNodeStrings(n, ex *structs.Node) {
	if n.ID == ex.ID {
		n.ID = ex.ID
	}
	if n.Name == ex.Name {
		n.Name = ex.Name
	}
}

// internNodeString returns the copy of a node ID or name held by unique's
// table while it holds it (see nodeStrings for how long that is).
func internNodeString(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}
