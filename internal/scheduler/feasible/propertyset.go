package feasible

import (
	"github.com/drover-project/drover/internal/structs"
)

// propertySet counts the allocations of one job (or one of its groups) by
// the value a node property takes on the node each runs on. It counts what
// will hold after the plan commits: existing non-terminal allocations,
// minus the plan's stops and preemptions, plus its placements. Spread and
// distinct_property both read it.
type propertySet struct {
	ctx       *Context
	namespace string
	jobID     string
	group     string // "" counts every group of the job
	target    string // e.g. "${meta.rack}"

	// nodeValues caches the property of each node seen; missing marks
	// nodes that lack it.
	nodeValues map[string]string
	missing    map[string]bool
}

func newPropertySet(ctx *Context, job *structs.Job, group, target string) *propertySet {
	return &propertySet{
		ctx: ctx, namespace: job.Namespace, jobID: job.ID, group: group, target: target,
		nodeValues: make(map[string]string), missing: make(map[string]bool),
	}
}

// value returns the property of n (ok false when the node lacks it).
func (p *propertySet) value(n *structs.Node) (string, bool) {
	if v, ok := p.nodeValues[n.ID]; ok {
		return v, true
	}
	if p.missing[n.ID] {
		return "", false
	}
	v, ok := resolveTarget(p.target, n)
	if ok {
		p.nodeValues[n.ID] = v
	} else {
		p.missing[n.ID] = true
	}
	return v, ok
}

func (p *propertySet) counts(a *structs.Allocation) bool {
	return a.Namespace == p.namespace && a.JobID == p.jobID && (p.group == "" || a.TaskGroup == p.group)
}

// Counts returns the number of allocations per property value. Allocations
// on nodes that lack the property, or whose node is gone, are not counted.
func (p *propertySet) Counts() (map[string]int, error) {
	nodeOf := make(map[string]string) // alloc ID -> node ID
	existing, err := p.ctx.State.AllocsByJob(nil, p.namespace, p.jobID, false)
	if err != nil {
		return nil, err
	}
	for _, a := range existing {
		if !a.TerminalStatus() && p.counts(a) {
			nodeOf[a.ID] = a.NodeID
		}
	}
	if plan := p.ctx.Plan; plan != nil {
		for _, list := range plan.NodeUpdate {
			for _, a := range list {
				delete(nodeOf, a.ID)
			}
		}
		for _, list := range plan.NodePreemptions {
			for _, a := range list {
				delete(nodeOf, a.ID)
			}
		}
		for _, list := range plan.NodeAllocation {
			for _, a := range list {
				if p.counts(a) && !a.TerminalStatus() {
					nodeOf[a.ID] = a.NodeID
				}
			}
		}
	}
	out := make(map[string]int)
	for _, nodeID := range nodeOf {
		v, ok, err := p.valueOfNodeID(nodeID)
		if err != nil {
			return nil, err
		}
		if ok {
			out[v]++
		}
	}
	return out, nil
}

func (p *propertySet) valueOfNodeID(id string) (string, bool, error) {
	if v, ok := p.nodeValues[id]; ok {
		return v, true, nil
	}
	if p.missing[id] {
		return "", false, nil
	}
	n, err := p.ctx.State.NodeByID(nil, id)
	if err != nil {
		return "", false, err
	}
	if n == nil {
		p.missing[id] = true
		return "", false, nil
	}
	v, ok := p.value(n)
	return v, ok, nil
}
