package feasible

import "github.com/drover-project/drover/internal/structs"

// SystemStack evaluates exactly one node per selection: feasibility
// (drivers, job and group constraints, distinct hosts) then bin-pack fit
// with a fresh port index. It never ranks across nodes: system and
// sysbatch jobs want the group on every node that can take it.
type SystemStack struct {
	ctx      *Context
	source   *SourceIterator
	feas     *FeasibilityIterator
	distinct *DistinctHostsIterator
	binpack  *BinPackIterator
	pool     string
}

// NewSystemStack builds the single-node chain.
func NewSystemStack(ctx *Context) *SystemStack {
	s := &SystemStack{ctx: ctx}
	s.source = NewSourceIterator(ctx, nil)
	s.feas = NewFeasibilityIterator(ctx, s.source)
	s.distinct = NewDistinctHostsIterator(ctx, s.feas)
	s.binpack = &BinPackIterator{ctx: ctx, source: &FeasibleRankIterator{source: s.distinct}, algorithm: AlgorithmBinpack}
	return s
}

// SetPreemption lets a placement evict allocations of jobs at least 10
// priority points lower when it does not fit otherwise.
func (s *SystemStack) SetPreemption(enabled bool) { s.binpack.evict = enabled }

// SetMemoryOversubscription grants tasks their memory_max when enabled.
func (s *SystemStack) SetMemoryOversubscription(enabled bool) { s.binpack.oversub = enabled }

// SetJob sets the job being placed.
func (s *SystemStack) SetJob(job *structs.Job) {
	s.feas.SetJob(job)
	s.binpack.priority = job.Priority
	s.distinct.SetJob(job)
	s.pool = job.NodePool
	if s.pool == "" {
		s.pool = structs.DefaultNodePool
	}
}

// Select checks whether tg can run on node and returns the option with
// its assigned resources, or nil. The context's Metrics tell a node
// filtered by constraints (NodesFiltered) from one without room
// (NodesExhausted).
func (s *SystemStack) Select(tg *structs.TaskGroup, node *structs.Node) *RankedNode {
	s.ctx.ResetMetrics()
	m := s.ctx.Metrics()
	m.NodePool = s.pool
	m.NodesInPool = 1
	m.NodesAvailable = map[string]int{node.Datacenter: 1}
	s.source.SetNodes([]*structs.Node{node})
	s.feas.SetTaskGroup(tg)
	s.distinct.SetTaskGroup(tg)
	s.binpack.tg = tg
	opt := s.binpack.Next()
	s.binpack.complete(opt)
	if opt != nil {
		opt.FinalScore = opt.Scores[0]
		s.ctx.recordScore(opt)
	}
	return opt
}
