package fsm

import (
	"strings"
	"sync"

	"github.com/drover-project/drover/internal/structs"
)

// compactNode shares, process-wide, the strings a node has in common with
// the rest of the cluster: attribute and meta keys (a real client
// fingerprints ~100 attributes, nearly all named and valued alike on every
// node), their values except "unique.*" attributes, driver names and
// health texts, and the datacenter, class, pool and status strings. Each
// node held private decoded copies of all of them. Maps whose keys change
// are rebuilt (the decoded node is not yet stored; stored nodes are never
// modified). No value changes. It also records the node's network
// check (Node.CheckNetwork), which every scheduling pass reads.
func compactNode(n *structs.Node) {
	if n == nil {
		return
	}
	for _, s := range []*string{&n.Datacenter, &n.NodeClass, &n.NodePool, &n.ComputedClass,
		&n.SchedulingEligibility, &n.Status, &n.StatusDescription, &n.CgroupParent} {
		*s = intern(*s)
	}
	n.ID = internNodeString(n.ID)
	n.Name = internNodeString(n.Name)
	n.CheckNetwork()
	n.Attributes = internStringMap(n.Attributes, true)
	n.Meta = internStringMap(n.Meta, false)
	n.Links = internStringMap(n.Links, false)
	if len(n.Drivers) > 0 {
		drivers := make(map[string]*structs.DriverInfo, len(n.Drivers))
		for name, d := range n.Drivers {
			if d != nil {
				d.HealthDescription = intern(d.HealthDescription)
				d.Attributes = internStringMap(d.Attributes, true)
			}
			drivers[intern(name)] = d
		}
		n.Drivers = drivers
	}
	if r := n.NodeResources; r != nil {
		for _, nw := range r.NodeNetworks {
			if nw == nil {
				continue
			}
			nw.Mode, nw.Device = intern(nw.Mode), intern(nw.Device)
			for i := range nw.Addresses {
				a := &nw.Addresses[i]
				a.Family, a.Alias = intern(a.Family), intern(a.Alias)
			}
		}
	}
}

// internStringMap returns m with interned keys and values (of "unique.*"
// keys too unless skipUnique: those differ per node, so interning them
// would only add a table entry each).
func internStringMap(m map[string]string, skipUnique bool) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if !skipUnique || !strings.HasPrefix(k, "unique.") {
			v = intern(v)
		}
		out[intern(k)] = v
	}
	return out
}

// internTable keeps one copy of each string compactNode shares, for the
// life of the process (bounded: it starts over when full). Interning with
// unique.Make(s).Value() alone did not last: unique forgets a string once
// no Handle to it is left, which is at the next collection, so nodes
// decoded after one got copies of their own (and string compares between
// nodes' classes, which the scheduler makes for every node it looks at,
// stopped being pointer compares). compactNode runs in the FSM's Apply and
// Restore, one at a time; the lock is uncontended.
var internTable struct {
	sync.Mutex
	m map[string]string
}

// maxInterned bounds internTable: the strings nodes share are attribute
// names and common values (a few hundred), not per-node ones.
const maxInterned = 1 << 16

func intern(s string) string {
	if s == "" {
		return s
	}
	internTable.Lock()
	defer internTable.Unlock()
	if v, ok := internTable.m[s]; ok {
		return v
	}
	if internTable.m == nil || len(internTable.m) >= maxInterned {
		internTable.m = make(map[string]string)
	}
	v := strings.Clone(s) // not a view into a larger decoded buffer
	internTable.m[v] = v
	return v
}
