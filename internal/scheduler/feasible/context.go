package feasible

import (
	"math/rand/v2"
	"regexp"

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
func (c *Context) Metrics() *structs.AllocMetric { return c.metrics }

// ResetMetrics starts fresh metrics for the next selection.
func (c *Context) ResetMetrics() { c.metrics = newMetrics() }

// Eligibility returns the per-class feasibility memo of this evaluation.
func (c *Context) Eligibility() *Eligibility { return c.eligibility }

// SetState swaps the state (after a partial commit refresh) and keeps the
// memo: node classes do not change meaning between snapshots.
func (c *Context) SetState(s AllocSource, plan *structs.Plan) {
	c.State = s
	c.Plan = plan
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
// node if the plan commits: existing non-terminal allocs, minus the plan's
// stops, evictions and updates, plus its placements and updates.
func (c *Context) ProposedAllocs(nodeID string) ([]*structs.Allocation, error) {
	existing, err := c.State.AllocsByNodeTerminal(nil, nodeID, false)
	if err != nil {
		return nil, err
	}
	var remove map[string]struct{}
	mark := func(list []*structs.Allocation) {
		for _, a := range list {
			if remove == nil {
				remove = make(map[string]struct{})
			}
			remove[a.ID] = struct{}{}
		}
	}
	if c.Plan != nil {
		mark(c.Plan.NodeUpdate[nodeID])
		mark(c.Plan.NodePreemptions[nodeID])
		mark(c.Plan.NodeAllocation[nodeID])
	}
	out := make([]*structs.Allocation, 0, len(existing)+4)
	for _, a := range existing {
		if a.TerminalStatus() {
			continue
		}
		if _, drop := remove[a.ID]; drop {
			continue
		}
		out = append(out, a)
	}
	if c.Plan != nil {
		out = append(out, c.Plan.NodeAllocation[nodeID]...)
	}
	return out, nil
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
