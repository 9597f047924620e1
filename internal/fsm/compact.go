package fsm

import (
	"encoding/binary"
	"maps"
	"math"
	"reflect"
	"sort"
	"unsafe"

	"github.com/drover-project/drover/internal/structs"
)

// compactPlanAllocs trims what each decoded placement keeps in memory for
// as long as it is stored, without changing anything the API shows:
//
//   - empty maps and slices in Metrics and AllocatedResources become nil
//     (the decoder allocates a map for every encoded empty one);
//   - identical NodesAvailable maps (every placement of one scheduling pass
//     has the same one) are shared, and so are equal per-node score maps of
//     the metrics' ScoreMetaData (nodes of one shape at the same load score
//     the same; five such maps per placement were its largest part);
//   - strings repeated across the entry's allocations (namespace, job, eval,
//     group, deployment, statuses, node pool) are shared;
//   - node IDs and names (the alloc's and the five scored nodes' in its
//     metrics) become the stored node's own strings (see nodeStrings): a
//     cluster has a bounded set of them, and each alloc held six 36-byte
//     copies;
//   - equal AllocatedResources are shared: placements of one task group
//     without ports or devices are granted the same resources, and each
//     held its own copy (struct, Tasks map, per-task struct: ~430 bytes);
//   - equal per-node scores (NodeScoreMeta) are shared: the nodes one
//     placement did not pick are scored the same by the next.
//
// Stored objects are never modified in place, so sharing is safe. It runs
// before the state write, on every server alike; it changes no value, so
// determinism is unaffected. nodes finds the strings of stored nodes (nil:
// they are interned with unique instead).
func compactPlanAllocs(reqs []*structs.ApplyPlanResultsRequest, nodes *nodeSource) {
	c := compactor{strs: map[string]string{}, scores: map[string]map[string]float64{}}
	if nodes != nil {
		c.known, c.storedNode = nodes.known, nodes.stored
	}
	for _, req := range reqs {
		for _, a := range req.Alloc {
			if a != nil {
				c.alloc(a)
			}
		}
	}
}

type compactor struct {
	strs       map[string]string
	known      map[string]nodeRef            // by node ID: stored nodes' strings, kept across entries; may be nil
	nodes      map[string]nodeRef            // by node ID: other nodes' strings shared in this entry
	storedNode func(id string) *structs.Node // may be nil
	available  []map[string]int
	resources  map[groupKey][]*structs.AllocatedResources // distinct grants per group, newest last
	scores     map[string]map[string]float64              // canonical contents -> first map
	metas      map[scoreMetaKey]*structs.NodeScoreMeta
	key        []byte
}

func (c *compactor) str(s *string) {
	if *s == "" {
		return
	}
	if v, ok := c.strs[*s]; ok {
		*s = v
		return
	}
	c.strs[*s] = *s
}

func (c *compactor) alloc(a *structs.Allocation) {
	for _, s := range []*string{&a.Namespace, &a.EvalID, &a.JobID, &a.TaskGroup, &a.DeploymentID,
		&a.DesiredStatus, &a.ClientStatus} {
		c.str(s)
	}
	c.nodeStrings(&a.NodeID, &a.NodeName)
	if m := a.Metrics; m != nil {
		c.str(&m.NodePool)
		m.NodesAvailable = c.sharedAvailable(m.NodesAvailable)
		m.ClassFiltered = nilIfEmpty(m.ClassFiltered)
		m.ConstraintFiltered = nilIfEmpty(m.ConstraintFiltered)
		m.ClassExhausted = nilIfEmpty(m.ClassExhausted)
		m.DimensionExhausted = nilIfEmpty(m.DimensionExhausted)
		m.ResourcesExhausted = nilIfEmpty(m.ResourcesExhausted)
		m.Scores = nilIfEmpty(m.Scores)
		if len(m.QuotaExhausted) == 0 {
			m.QuotaExhausted = nil
		}
		if len(m.ScoreMetaData) == 0 {
			m.ScoreMetaData = nil
		}
		for i, s := range m.ScoreMetaData {
			if s != nil {
				c.nodeStrings(&s.NodeID, nil)
				s.Scores = c.sharedScores(s.Scores)
				m.ScoreMetaData[i] = c.sharedScoreMeta(s)
			}
		}
	}
	if r := a.AllocatedResources; r != nil {
		r.Tasks = nilIfEmpty(r.Tasks)
		r.TaskLifecycles = nilIfEmpty(r.TaskLifecycles)
		a.AllocatedResources = c.sharedResources(groupKey{a.Namespace, a.JobID, a.TaskGroup}, r)
	}
	if len(a.PreemptedAllocations) == 0 {
		a.PreemptedAllocations = nil
	}
	if len(a.TaskStates) == 0 {
		a.TaskStates = nil
	}
}

// sharedAvailable returns an equal map seen before in this entry, or m.
func (c *compactor) sharedAvailable(m map[string]int) map[string]int {
	if len(m) == 0 {
		return nil
	}
	for _, seen := range c.available {
		if maps.Equal(seen, m) {
			return seen
		}
	}
	if len(c.available) < 8 {
		c.available = append(c.available, m)
	}
	return m
}

// groupKey names a job's task group.
type groupKey struct{ namespace, job, group string }

// sharedResources returns an equal grant seen before for the same group,
// or r. Each group's last four distinct grants are kept: groups without
// ports or devices have one; grants with ports differ and are compared in
// full only against those four.
func (c *compactor) sharedResources(g groupKey, r *structs.AllocatedResources) *structs.AllocatedResources {
	seen := c.resources[g]
	for i := len(seen) - 1; i >= 0; i-- {
		if equalGrants(seen[i], r) {
			return seen[i]
		}
	}
	if c.resources == nil {
		c.resources = map[groupKey][]*structs.AllocatedResources{}
	}
	if len(seen) == 4 {
		seen = append(seen[:0], seen[1:]...)
	}
	c.resources[g] = append(seen, r)
	return r
}

// sharedScores returns an equal score map seen before in this entry, or m.
func (c *compactor) sharedScores(m map[string]float64) map[string]float64 {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := c.key[:0]
	for _, k := range keys {
		b = append(b, k...)
		b = append(b, 0)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(m[k]))
	}
	c.key = b
	if seen, ok := c.scores[string(b)]; ok {
		return seen
	}
	c.scores[string(b)] = m
	return m
}

// scoreMetaKey identifies a NodeScoreMeta whose node ID and score map are
// already shared: equal ones have the same key.
type scoreMetaKey struct {
	node   string
	scores unsafe.Pointer
	norm   uint64
}

// sharedScoreMeta returns an equal per-node score seen before in this
// entry, or s. The nodes a placement did not pick keep their scores for the
// next placement of the pass, so most of the five an allocation records
// were recorded by the one before it too.
func (c *compactor) sharedScoreMeta(s *structs.NodeScoreMeta) *structs.NodeScoreMeta {
	k := scoreMetaKey{node: s.NodeID, norm: math.Float64bits(s.NormScore)}
	if s.Scores != nil {
		k.scores = reflect.ValueOf(s.Scores).UnsafePointer()
	}
	if seen, ok := c.metas[k]; ok {
		return seen
	}
	if c.metas == nil {
		c.metas = map[scoreMetaKey]*structs.NodeScoreMeta{}
	}
	c.metas[k] = s
	return s
}

func nilIfEmpty[K comparable, V any](m map[K]V) map[K]V {
	if len(m) == 0 {
		return nil
	}
	return m
}

// compactClientAllocs shares the strings repeated across a client update's
// allocations (statuses, descriptions, task states, event texts): every
// one of the entry's allocations carries the same few values, decoded
// as a fresh copy each. Like compactPlanAllocs it changes no value.
func compactClientAllocs(allocs []*structs.Allocation) {
	c := compactor{strs: map[string]string{}}
	for _, a := range allocs {
		if a != nil {
			c.clientFields(a)
		}
	}
}

// clientFields shares the strings of the client-owned fields.
func (c *compactor) clientFields(a *structs.Allocation) {
	c.str(&a.ClientStatus)
	c.str(&a.ClientDescription)
	for _, ts := range a.TaskStates {
		if ts == nil {
			continue
		}
		c.str(&ts.State)
		for _, e := range ts.Events {
			if e != nil {
				c.str(&e.Type)
				c.str(&e.Message)
				c.str(&e.DisplayMessage)
			}
		}
	}
}

// restoreCompactor compacts the allocations of a snapshot as they are
// restored, one at a time, as compactPlanAllocs and compactClientAllocs do
// for those applied from the log: without it a restarted server held a
// private copy of every string, grant and score map of every allocation.
// Its tables are dropped every restoreCompactEvery allocations to bound
// what the restore itself holds.
// The restored nodes (restored before the allocations) are kept by ID for
// the restore's duration: they are the stored nodes whose ID and name
// strings the allocations share.
type restoreCompactor struct {
	c     compactor
	n     int
	nodes map[string]*structs.Node
}

const restoreCompactEvery = 1 << 14

// node records a restored node.
func (r *restoreCompactor) node(n *structs.Node) {
	if r.nodes == nil {
		r.nodes = map[string]*structs.Node{}
	}
	r.nodes[n.ID] = n
}

func (r *restoreCompactor) storedNode(id string) *structs.Node { return r.nodes[id] }

func (r *restoreCompactor) alloc(a *structs.Allocation) {
	if r.n%restoreCompactEvery == 0 {
		r.c = compactor{strs: map[string]string{}, scores: map[string]map[string]float64{}, storedNode: r.storedNode}
	}
	r.n++
	r.c.alloc(a)
	r.c.clientFields(a)
}
