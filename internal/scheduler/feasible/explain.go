package feasible

import (
	"maps"
	"sort"

	"github.com/drover-project/drover/internal/structs"
)

// Explain collects, while one evaluation is scheduled, which nodes each
// filter removed and how every ranked node scored, per task group. It backs
// `job plan -explain`. A Context without one (the normal case) pays a nil
// check per hook and nothing else.
//
// Counts are of distinct nodes: a group with count 3 selects three times,
// and a node removed by the same constraint each time is one node. A node
// ranked more than once keeps its latest scores, the ones in force when the
// last placement of the group was decided.
//
// An Explain is used by one scheduler at a time; it is not safe for
// concurrent use.
type Explain struct {
	group  string
	groups map[string]*groupExplain
}

type groupExplain struct {
	evaluated map[string]struct{}
	filtered  map[string]map[string]struct{}
	exhausted map[string]map[string]struct{}
	nodes     map[string]*structs.NodeExplain
}

// NewExplain returns an empty collector.
func NewExplain() *Explain { return &Explain{groups: make(map[string]*groupExplain)} }

// SetExplain attaches a collector (nil detaches). Attaching starts it over,
// so a scheduler pass that is retried is explained by its last attempt.
func (c *Context) SetExplain(e *Explain) {
	c.explain = e
	if e != nil {
		e.group = ""
		e.groups = make(map[string]*groupExplain)
	}
}

func (e *Explain) current() *groupExplain {
	g, ok := e.groups[e.group]
	if !ok {
		g = &groupExplain{
			evaluated: make(map[string]struct{}),
			filtered:  make(map[string]map[string]struct{}),
			exhausted: make(map[string]map[string]struct{}),
			nodes:     make(map[string]*structs.NodeExplain),
		}
		e.groups[e.group] = g
	}
	return g
}

func addNode(m map[string]map[string]struct{}, key, nodeID string) {
	set, ok := m[key]
	if !ok {
		set = make(map[string]struct{})
		m[key] = set
	}
	set[nodeID] = struct{}{}
}

// The hooks below are called by the chain; each is a no-op on a nil
// collector.

func (c *Context) explainSelect(tg *structs.TaskGroup) {
	if c.explain != nil {
		c.explain.group = tg.Name
		c.explain.current()
	}
}

func (c *Context) explainFiltered(n *structs.Node, reason string) {
	if c.explain == nil {
		return
	}
	if reason == "" {
		reason = "filtered"
	}
	g := c.explain.current()
	g.evaluated[n.ID] = struct{}{}
	addNode(g.filtered, reason, n.ID)
}

func (c *Context) explainExhausted(n *structs.Node, dimension string) {
	if c.explain == nil {
		return
	}
	if dimension == "" {
		dimension = "resources"
	}
	g := c.explain.current()
	g.evaluated[n.ID] = struct{}{}
	addNode(g.exhausted, dimension, n.ID)
}

func (c *Context) explainScored(opt *RankedNode) {
	if c.explain == nil {
		return
	}
	g := c.explain.current()
	g.evaluated[opt.Node.ID] = struct{}{}
	g.nodes[opt.Node.ID] = &structs.NodeExplain{
		NodeID: opt.Node.ID, NodeName: opt.Node.Name,
		Scores: opt.ScoreMap(), Final: opt.FinalScore,
	}
}

// NotReadyReason says why ReadyNodes would leave the node out for job, or
// "" when it would keep it. Explain uses it to count the nodes that never
// entered the chain.
func NotReadyReason(n *structs.Node, job *structs.Job) string {
	switch {
	case n.Status != structs.NodeStatusReady:
		return "node not ready"
	case n.DrainStrategy != nil:
		return "node draining"
	case n.SchedulingEligibility != structs.NodeSchedulingEligible:
		return "node ineligible"
	}
	pool := job.NodePool
	if pool == "" {
		pool = structs.DefaultNodePool
	}
	np := n.NodePool
	if np == "" {
		np = structs.DefaultNodePool
	}
	if pool != structs.AllNodePool && np != pool {
		return "node pool"
	}
	dcs := job.Datacenters
	if len(dcs) == 0 {
		dcs = []string{"*"}
	}
	if !matchDatacenter(dcs, n.Datacenter) {
		return "datacenter"
	}
	return ""
}

// Result builds the explanation: every group the scheduler tried to place,
// with the readiness filters over all (the cluster's nodes) added to each,
// Placed counted from the plans, and the ranked nodes sorted best first and
// cut to structs.ExplainTopNodes unless keepAll.
func (e *Explain) Result(all []*structs.Node, job *structs.Job, plans []*structs.Plan, keepAll bool) *structs.PlanExplain {
	out := &structs.PlanExplain{TaskGroups: make(map[string]*structs.TGExplain, len(e.groups))}
	notReady := make(map[string]int)
	if job != nil {
		for _, n := range all {
			if r := NotReadyReason(n, job); r != "" {
				notReady[r]++
			}
		}
	}
	placed := make(map[string]map[string]int)
	for _, p := range plans {
		for nodeID, allocs := range p.NodeAllocation {
			for _, a := range allocs {
				if placed[a.TaskGroup] == nil {
					placed[a.TaskGroup] = make(map[string]int)
				}
				placed[a.TaskGroup][nodeID]++
			}
		}
	}
	for name, g := range e.groups {
		if name == "" {
			continue
		}
		tg := &structs.TGExplain{
			NodesEvaluated: len(g.evaluated),
			NodesScored:    len(g.nodes),
			Filtered:       make(map[string]int, len(g.filtered)+len(notReady)),
			Exhausted:      make(map[string]int, len(g.exhausted)),
			Nodes:          make([]*structs.NodeExplain, 0, len(g.nodes)),
		}
		maps.Copy(tg.Filtered, notReady)
		for reason, set := range g.filtered {
			tg.Filtered[reason] += len(set)
		}
		for dim, set := range g.exhausted {
			tg.Exhausted[dim] = len(set)
		}
		for _, n := range g.nodes {
			cp := *n
			cp.Placed = placed[name][n.NodeID]
			tg.Nodes = append(tg.Nodes, &cp)
		}
		sort.Slice(tg.Nodes, func(i, j int) bool {
			a, b := tg.Nodes[i], tg.Nodes[j]
			if a.Final != b.Final {
				return a.Final > b.Final
			}
			if a.NodeName != b.NodeName {
				return a.NodeName < b.NodeName
			}
			return a.NodeID < b.NodeID
		})
		if !keepAll && len(tg.Nodes) > structs.ExplainTopNodes {
			tg.Nodes = tg.Nodes[:structs.ExplainTopNodes]
		}
		out.TaskGroups[name] = tg
	}
	return out
}

// WithoutExplain runs f with explanation collection off: selections the
// scheduler makes for its own checks (whether an in-place update still fits
// on its node) are not part of what a plan explains.
func (c *Context) WithoutExplain(f func()) {
	e := c.explain
	c.explain = nil
	defer func() { c.explain = e }()
	f()
}
