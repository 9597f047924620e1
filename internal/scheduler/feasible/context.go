package feasible

import (
	"math/rand/v2"
	"regexp"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
)

// AllocSource is the slice of state the chain reads. The scheduler's
// State (and *state.StateSnapshot) satisfy it.
type AllocSource interface {
	AllocsByNodeTerminal(ws memdb.WatchSet, nodeID string, terminal bool) ([]*structs.Allocation, error)
	// AllocsByJob feeds spread and distinct_property counts.
	AllocsByJob(ws memdb.WatchSet, namespace, jobID string, anyCreateIndex bool) ([]*structs.Allocation, error)
	// NodeByID resolves the node property of allocations placed elsewhere.
	NodeByID(ws memdb.WatchSet, id string) (*structs.Node, error)
}

// liveAllocsReader is a state that reads many nodes' non-terminal
// allocations from one transaction (*state.StateSnapshot).
type liveAllocsReader interface {
	LiveAllocsByNodeReader() func(nodeID string) (*state.LiveAllocs, error)
}

// Context is shared by the iterators of one evaluation.
type Context struct {
	State  AllocSource
	Plan   *structs.Plan
	Logger hclog.Logger
	Rand   *rand.Rand

	metrics     *structs.AllocMetric
	eligibility *Eligibility
	regexps     map[string]*regexp.Regexp
	classes     map[string]string
	explain     *Explain // nil unless a dry run asked why (explain.go)

	// nodes caches each node's allocations in State (ProposedAllocs),
	// keyed by the node object: a snapshot holds one object per node, and
	// a pointer hashes in a fraction of the time of a 36-byte ID (the
	// cache is consulted for every node a selection looks at). liveAllocs
	// reads them (one read transaction for the pass when the state offers
	// it); slab is the unused rest of the entries allocated together.
	nodes      map[*structs.Node]*nodeAllocs
	liveAllocs func(nodeID string) (*state.LiveAllocs, error)
	slab       []nodeAllocs
	// pending are score entries of metrics whose maps are built when the
	// metrics are read (recordScore).
	pending [maxScoreMeta]pendingScores
}

// NewContext builds a context. seed drives node shuffling and port choice.
func NewContext(state AllocSource, plan *structs.Plan, logger hclog.Logger, seed1, seed2 uint64) *Context {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Context{
		State:       state,
		Plan:        plan,
		Logger:      logger,
		Rand:        rand.New(rand.NewPCG(seed1, seed2)),
		metrics:     newMetrics(),
		eligibility: NewEligibility(),
		regexps:     make(map[string]*regexp.Regexp),
		classes:     make(map[string]string),
	}
}

func newMetrics() *structs.AllocMetric { return &structs.AllocMetric{} }

// Metrics returns the metrics of the current selection.
func (c *Context) Metrics() *structs.AllocMetric {
	c.flushScores()
	return c.metrics
}

// ResetMetrics starts fresh metrics for the next selection.
func (c *Context) ResetMetrics() {
	c.flushScores()
	c.metrics = newMetrics()
}

// Eligibility returns the per-class feasibility memo of this evaluation.
func (c *Context) Eligibility() *Eligibility { return c.eligibility }

// SetState swaps the state (after a partial commit refresh) and keeps the
// memo: node classes do not change meaning between snapshots.
func (c *Context) SetState(s AllocSource, plan *structs.Plan) {
	c.State = s
	c.Plan = plan
	c.nodes = nil
	c.liveAllocs = nil
	c.slab = nil
}

// ComputedClass returns the node's computed class, computing it (without
// mutating the shared node) when the node was stored without one.
func (c *Context) ComputedClass(n *structs.Node) string {
	if n.ComputedClass != "" {
		return n.ComputedClass
	}
	if cl, ok := c.classes[n.ID]; ok {
		return cl
	}
	cp := *n
	cp.ComputeClass()
	c.classes[n.ID] = cp.ComputedClass
	return cp.ComputedClass
}

// ProposedAllocs returns the allocations that will hold resources on the
// node n (of the context's state) if the plan commits: existing non-terminal allocs, minus the plan's
// stops, evictions and updates, plus its placements and updates. The
// result may be shared with the context's cache: never modify it.
func (c *Context) ProposedAllocs(n *structs.Node) ([]*structs.Allocation, error) {
	u, err := c.proposedUsage(n)
	return u.allocs, err
}

// nodeAllocs is what the state holds on one node, read once per context:
// the snapshot is immutable, so only the plan (combined on every read)
// changes what is proposed there.
type nodeAllocs struct {
	nodeBase

	// netErr memoises structs.NodeNetworkErr for the pass (a node ID names one
	// node object in a snapshot); netChecked says it was computed.
	netChecked bool
	netErr     error

	// portIdx is the node's port index over the proposed allocations as
	// of portAt (rank.go's keptPortIndex); portTried says the node was
	// tried with a fresh index as of portAt.
	portIdx   *portIndex
	portTried bool
	portAt    [3]listMark

	// proposed is the last combination with the plan, valid while the
	// plan's lists for the node are as described by planAt.
	proposed proposedUsage
	planAt   [3]listMark
}

// networkErr is structs.NodeNetworkErr(n), computed once per pass for n.
func (u *proposedUsage) networkErr(n *structs.Node) error {
	na := u.node
	if na == nil {
		return structs.NodeNetworkErr(n)
	}
	if !na.netChecked {
		na.netErr, na.netChecked = structs.NodeNetworkErr(n), true
	}
	return na.netErr
}

// nodeBase is what the state holds on a node: its non-terminal
// allocations in state order and their usage (state.LiveAllocs, shared
// read-only between passes).
type nodeBase struct {
	existing []*structs.Allocation
	usage    structs.AllocsUsage
	live     *state.LiveAllocs // existing's, with memoised group counts
}

// listMark identifies the state of a plan list that is only appended to
// or popped from the end (structs.Plan's methods): its length and last
// element. Appended and re-appended allocations are fresh pointers.
type listMark struct {
	n    int
	last *structs.Allocation
}

func markOf(list []*structs.Allocation) listMark {
	if len(list) == 0 {
		return listMark{}
	}
	return listMark{n: len(list), last: list[len(list)-1]}
}

// proposedUsage is ProposedAllocs with what they hold (AllocsUsage: the
// sums of those not client-terminal, and whether some hold ports or
// devices, which need the port index or the device checks beside them).
type proposedUsage struct {
	allocs []*structs.Allocation
	structs.AllocsUsage

	// node is the pass's cache entry of the node and at the plan's lists
	// for it when allocs was combined (zero: the plan has none).
	node *nodeAllocs
	at   [3]listMark

	// exact says allocs are node's existing allocations followed by
	// extra (the plan's placements there) with none removed.
	exact bool
	extra []*structs.Allocation
}

// usageOf sums allocs from scratch.
func usageOf(allocs []*structs.Allocation) proposedUsage {
	return proposedUsage{allocs: allocs, AllocsUsage: structs.SumAllocs(allocs)}
}

func (c *Context) nodeAllocs(n *structs.Node) (*nodeAllocs, error) {
	if na, ok := c.nodes[n]; ok {
		return na, nil
	}
	if c.liveAllocs == nil {
		c.liveAllocs = func(id string) (*state.LiveAllocs, error) {
			all, err := c.State.AllocsByNodeTerminal(nil, id, false)
			return &state.LiveAllocs{Allocs: all}, err
		}
		if r, ok := c.State.(liveAllocsReader); ok {
			c.liveAllocs = r.LiveAllocsByNodeReader()
		}
	}
	live, err := c.liveAllocs(n.ID)
	if err != nil {
		return nil, err
	}
	if len(c.slab) == 0 {
		// A large evaluation reads thousands of nodes: entries are
		// allocated in chunks that grow with the cache (16, the dozen
		// nodes of one selection, at first; at most 256).
		c.slab = make([]nodeAllocs, min(256, max(16, len(c.nodes))))
	}
	na := &c.slab[0]
	c.slab = c.slab[1:]
	// The sums are shared by every pass that finds the node's
	// allocations unchanged.
	na.existing, na.usage, na.live = live.Allocs, live.Usage(), live
	if c.nodes == nil {
		// A selection looks at a dozen or more nodes (log2 of the
		// cluster): start with room for them.
		c.nodes = make(map[*structs.Node]*nodeAllocs, 16)
	}
	c.nodes[n] = na
	return na, nil
}

func (c *Context) proposedUsage(n *structs.Node) (proposedUsage, error) {
	na, err := c.nodeAllocs(n)
	if err != nil {
		return proposedUsage{}, err
	}
	nodeID := n.ID
	var updates, preempted, placed []*structs.Allocation
	if c.Plan != nil {
		updates = c.Plan.NodeUpdate[nodeID]
		preempted = c.Plan.NodePreemptions[nodeID]
		placed = c.Plan.NodeAllocation[nodeID]
	}
	if len(updates)+len(preempted)+len(placed) == 0 {
		return proposedUsage{allocs: na.existing, AllocsUsage: na.usage, node: na, exact: true}, nil
	}
	at := [3]listMark{markOf(updates), markOf(preempted), markOf(placed)}
	if at == na.planAt {
		return na.proposed, nil
	}
	na.proposed, na.planAt = na.combine(updates, preempted, placed), at
	na.proposed.node, na.proposed.at = na, at
	return na.proposed, nil
}

// planRemoves reports whether the plan's lists for a node (or remove, their
// IDs, when built) name the allocation id.
func planRemoves(lists *[3][]*structs.Allocation, remove map[string]struct{}, id string) bool {
	if remove != nil {
		_, ok := remove[id]
		return ok
	}
	for _, list := range lists {
		for _, a := range list {
			if a.ID == id {
				return true
			}
		}
	}
	return false
}

// combine applies the plan's stops, evictions and placements on the node
// to its allocations in state. The sums start from the node's and are
// adjusted by what the plan removes and adds (exact integers), so the cost
// follows the plan's entries for the node, not its allocations.
func (na *nodeAllocs) combine(updates, preempted, placed []*structs.Allocation) proposedUsage {
	lists := [3][]*structs.Allocation{updates, preempted, placed}
	var remove map[string]struct{}
	if len(updates)+len(preempted)+len(placed) > 16 {
		remove = make(map[string]struct{}, len(updates)+len(preempted)+len(placed))
		for _, list := range lists {
			for _, a := range list {
				remove[a.ID] = struct{}{}
			}
		}
	}
	u := proposedUsage{AllocsUsage: na.usage}
	out := make([]*structs.Allocation, 0, len(na.existing)+len(placed))
	for _, a := range na.existing {
		if !planRemoves(&lists, remove, a.ID) {
			out = append(out, a)
			continue
		}
		u.Remove(a)
	}
	u.exact, u.extra = len(out) == len(na.existing), placed
	u.allocs = append(out, placed...)
	for _, a := range placed {
		u.Add(a)
	}
	return u
}

func (c *Context) regexp(expr string) (*regexp.Regexp, error) {
	if re, ok := c.regexps[expr]; ok {
		return re, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	c.regexps[expr] = re
	return re, nil
}

// filterNode records a node removed by feasibility.
func (c *Context) filterNode(n *structs.Node, reason string) {
	c.explainFiltered(n, reason)
	m := c.metrics
	m.NodesFiltered++
	if n.NodeClass != "" {
		if m.ClassFiltered == nil {
			m.ClassFiltered = make(map[string]int)
		}
		m.ClassFiltered[n.NodeClass]++
	}
	if reason != "" {
		if m.ConstraintFiltered == nil {
			m.ConstraintFiltered = make(map[string]int)
		}
		m.ConstraintFiltered[reason]++
	}
}

// exhaustedNode records a feasible node without room.
func (c *Context) exhaustedNode(n *structs.Node, dimension string) {
	c.explainExhausted(n, dimension)
	m := c.metrics
	m.NodesExhausted++
	if n.NodeClass != "" {
		if m.ClassExhausted == nil {
			m.ClassExhausted = make(map[string]int)
		}
		m.ClassExhausted[n.NodeClass]++
	}
	if dimension != "" {
		if m.DimensionExhausted == nil {
			m.DimensionExhausted = make(map[string]int)
		}
		m.DimensionExhausted[dimension]++
	}
}

// Eligibility memoises feasibility per computed node class, separately for
// job-level and group-level checks. A class whose outcome depends on unique
// node properties is "escaped" and always re-checked.
type Eligibility struct {
	job       map[string]classStatus
	groups    map[string]map[string]classStatus
	jobEscape bool
	tgEscape  map[string]bool
}

type classStatus struct {
	eligible bool
	reason   string
}

// NewEligibility returns an empty memo.
func NewEligibility() *Eligibility {
	return &Eligibility{
		job:      make(map[string]classStatus),
		groups:   make(map[string]map[string]classStatus),
		tgEscape: make(map[string]bool),
	}
}

// HasEscaped reports whether any check depended on unique node properties.
func (e *Eligibility) HasEscaped() bool {
	if e.jobEscape {
		return true
	}
	for _, v := range e.tgEscape {
		if v {
			return true
		}
	}
	return false
}

// Classes returns, for each class seen, whether some group was feasible on
// it (for blocked evals: which node classes could unblock them).
func (e *Eligibility) Classes() map[string]bool {
	out := make(map[string]bool)
	for class, st := range e.job {
		if !st.eligible {
			out[class] = false
		}
	}
	for _, classes := range e.groups {
		for class, st := range classes {
			if js, ok := e.job[class]; ok && !js.eligible {
				continue
			}
			if st.eligible {
				out[class] = true
			} else if _, ok := out[class]; !ok {
				out[class] = false
			}
		}
	}
	return out
}
