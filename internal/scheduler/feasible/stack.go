package feasible

import (
	"math"
	"path"
	"strings"

	"github.com/drover-project/drover/internal/structs"
)

// SelectOptions tune one selection.
type SelectOptions struct {
	// PenaltyNodeIDs are nodes to avoid (where the replaced alloc failed).
	PenaltyNodeIDs map[string]struct{}
	// PreferredNode, when set, is tried alone first (a sticky or
	// migrating ephemeral disk prefers the replaced allocation's node);
	// the whole candidate list is searched only when it does not fit.
	PreferredNode *structs.Node
	// AllocName is the name of the allocation placed ("job.group[2]"):
	// per_alloc host volumes are looked up by its index.
	AllocName string
}

// affinitySpreadLimit is how many nodes a selection visits at least when
// the group has affinities or spreads (Nomad's default
// NodeLimitForFeasibilityChecks).
const affinitySpreadLimit = 100

// Stack is the chain used by the service and batch schedulers:
// source → feasibility → distinct hosts → distinct property → bin-pack
// (with optional preemption) → job anti-affinity → reschedule penalty →
// node affinity → spread → preemption penalty → normalise → limit → max
// score.
type Stack struct {
	ctx   *Context
	batch bool
	job   *structs.Job

	source   *SourceIterator
	feas     *FeasibilityIterator
	distinct *DistinctHostsIterator
	property *DistinctPropertyIterator
	binpack  *BinPackIterator
	anti     *JobAntiAffinityIterator
	penalty  *PenaltyIterator
	affinity *NodeAffinityIterator
	spread   *SpreadIterator
	limit    *LimitIterator
	max      *MaxScoreIterator

	baseLimit int

	nodesByDC map[string]int
	pool      string
	poolSize  int
}

// NewGenericStack builds the chain. algorithm is "binpack" (default) or "spread".
func NewGenericStack(batch bool, algorithm string, ctx *Context) *Stack {
	s := &Stack{ctx: ctx, batch: batch}
	s.source = NewSourceIterator(ctx, nil)
	s.feas = NewFeasibilityIterator(ctx, s.source)
	s.distinct = NewDistinctHostsIterator(ctx, s.feas)
	s.property = NewDistinctPropertyIterator(ctx, s.distinct)
	// Options live until the next Select (the scheduler builds its
	// allocation before asking again), so their memory is reused.
	s.binpack = &BinPackIterator{ctx: ctx, source: &FeasibleRankIterator{source: s.property, reuse: true}, algorithm: algorithm}
	s.anti = &JobAntiAffinityIterator{source: s.binpack}
	s.penalty = &PenaltyIterator{source: s.anti}
	s.affinity = &NodeAffinityIterator{ctx: ctx, source: s.penalty}
	s.spread = &SpreadIterator{ctx: ctx, source: s.affinity}
	preempt := &PreemptionScoringIterator{source: s.spread}
	norm := &NormalizeIterator{ctx: ctx, source: preempt}
	s.limit = &LimitIterator{source: norm, limit: 2, maxSkip: 3, threshold: 0}
	s.max = &MaxScoreIterator{source: s.limit}
	return s
}

// SetNodes sets the candidate nodes (ready, in the job's datacenters and
// pool); they are visited in a random order drawn from the context's
// seeded source.
func (s *Stack) SetNodes(nodes []*structs.Node) {
	s.SetScopedNodes(nodes, CountByDatacenter(nodes))
}

// SetScopedNodes is SetNodes with the per-datacenter counts of nodes
// already known (a memoised ready-node scope). nodes and byDC are only
// read: the source draws its random order lazily beside them.
func (s *Stack) SetScopedNodes(nodes []*structs.Node, byDC map[string]int) {
	s.source.SetShuffledNodes(nodes, s.ctx.Rand)
	s.nodesByDC = byDC
	s.poolSize = len(nodes)
	limit := 2
	if !s.batch && len(nodes) > 0 {
		if l := int(math.Ceil(math.Log2(float64(len(nodes))))); l > limit {
			limit = l
		}
	}
	s.baseLimit = limit
	s.limit.limit = limit
}

// CountByDatacenter counts nodes per datacenter (AllocMetric.NodesAvailable).
func CountByDatacenter(nodes []*structs.Node) map[string]int {
	out := make(map[string]int)
	for _, n := range nodes {
		out[n.Datacenter]++
	}
	return out
}

// SetPreemption lets placements evict allocations of jobs at least 10
// priority points lower when they do not fit otherwise (the scheduler
// enables it per job type).
func (s *Stack) SetPreemption(enabled bool) { s.binpack.evict = enabled }

// SetMemoryOversubscription grants tasks their memory_max when enabled
// (the scheduler configuration's MemoryOversubscriptionEnabled).
func (s *Stack) SetMemoryOversubscription(enabled bool) { s.binpack.oversub = enabled }

// SetJob sets the job being placed.
func (s *Stack) SetJob(job *structs.Job) {
	s.job = job
	s.feas.SetJob(job)
	s.distinct.SetJob(job)
	s.property.SetJob(job)
	s.binpack.priority = job.Priority
	s.affinity.SetJob(job)
	s.spread.SetJob(job)
	s.anti.job, s.anti.groupOf = job, nil
	s.pool = job.NodePool
	if s.pool == "" {
		s.pool = structs.DefaultNodePool
	}
}

// Select picks the best node for one allocation of tg, or nil. The
// context's Metrics explain the outcome either way. The option is valid
// until the next Select.
func (s *Stack) Select(tg *structs.TaskGroup, opts *SelectOptions) *RankedNode {
	if opts != nil && opts.PreferredNode != nil {
		// Search the preferred node alone, then restore the candidate
		// list (and its lazily drawn order) as it was.
		saved := *s.source
		s.source.SetNodes([]*structs.Node{opts.PreferredNode})
		best := s.selectOnce(tg, opts)
		*s.source = saved
		if best != nil {
			return best
		}
	}
	return s.selectOnce(tg, opts)
}

// selectOnce is one search of the current candidate list.
func (s *Stack) selectOnce(tg *structs.TaskGroup, opts *SelectOptions) *RankedNode {
	s.ctx.ResetMetrics()
	s.ctx.explainSelect(tg)
	m := s.ctx.Metrics()
	m.NodePool = s.pool
	m.NodesInPool = s.poolSize
	m.NodesAvailable = make(map[string]int, len(s.nodesByDC))
	for dc, n := range s.nodesByDC {
		m.NodesAvailable[dc] = n
	}
	s.feas.SetTaskGroup(tg)
	s.feas.SetAllocName("")
	if opts != nil {
		s.feas.SetAllocName(opts.AllocName)
	}
	s.distinct.SetTaskGroup(tg)
	s.property.SetTaskGroup(tg)
	s.binpack.tg = tg
	s.affinity.SetTaskGroup(tg)
	s.spread.SetTaskGroup(tg)
	s.limit.limit = s.baseLimit
	if len(s.affinity.affinities) > 0 || len(s.spread.spreads) > 0 {
		// Scores that vary across many nodes are only useful if many
		// nodes are looked at.
		s.limit.limit = max(tg.Count, affinitySpreadLimit)
	}
	s.anti.tg = tg
	s.penalty.penalty = nil
	if opts != nil {
		s.penalty.penalty = opts.PenaltyNodeIDs
	}
	s.max.Reset()
	best := s.max.Next()
	s.binpack.complete(best)
	return best
}

// ReadyNodes filters nodes down to those that may receive placements of
// job: ready, eligible, not draining, in one of the job's datacenters
// (glob patterns; none means all) and in its node pool ("all" means any).
func ReadyNodes(all []*structs.Node, job *structs.Job) []*structs.Node {
	var out []*structs.Node
	for _, n := range all {
		if n != nil && n.Ready() && InJobScope(n, job) {
			out = append(out, n)
		}
	}
	return out
}

// ScopeKey names the node scope of job (its datacenters and node pool):
// jobs with equal keys have equal ReadyNodes.
func ScopeKey(job *structs.Job) string {
	pool := job.NodePool
	if pool == "" {
		pool = structs.DefaultNodePool
	}
	dcs := job.Datacenters
	if len(dcs) == 0 {
		dcs = []string{"*"}
	}
	return pool + "\x00" + strings.Join(dcs, "\x00")
}

// InJobScope reports whether the node is in one of the job's datacenters
// (glob patterns; none means all) and in its node pool ("all" means any),
// whatever its status.
func InJobScope(n *structs.Node, job *structs.Job) bool {
	dcs := job.Datacenters
	if len(dcs) == 0 {
		dcs = []string{"*"}
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
		return false
	}
	return matchDatacenter(dcs, n.Datacenter)
}

func matchDatacenter(patterns []string, dc string) bool {
	for _, p := range patterns {
		if p == dc {
			return true
		}
		if ok, err := path.Match(p, dc); err == nil && ok {
			return true
		}
	}
	return false
}
