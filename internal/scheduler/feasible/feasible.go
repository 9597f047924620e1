package feasible

import (
	"math/rand/v2"
	"strconv"

	"github.com/drover-project/drover/internal/structs"
)

// NodeIterator yields candidate nodes.
type NodeIterator interface {
	Next() *structs.Node
	Reset()
}

// SourceIterator yields each node once per selection, starting where the
// previous selection stopped, so successive placements look at different
// nodes first.
type SourceIterator struct {
	ctx    *Context
	nodes  []*structs.Node
	offset int
	seen   int

	// With a shuffle source, nodes is the unshuffled (shared, read-only)
	// list and the order is drawn lazily, one Fisher-Yates step per
	// position first visited: an evaluation that looks at a dozen nodes
	// pays for a dozen, not for the whole cluster. order holds the
	// positions drawn so far; moved maps a not yet drawn position whose
	// node was swapped away to the node now there.
	rand  *rand.Rand
	order []*structs.Node
	moved map[int]*structs.Node
}

// NewSourceIterator returns a source over nodes (already shuffled).
func NewSourceIterator(ctx *Context, nodes []*structs.Node) *SourceIterator {
	return &SourceIterator{ctx: ctx, nodes: nodes}
}

// SetNodes replaces the node list; nodes are visited in the given order.
func (s *SourceIterator) SetNodes(nodes []*structs.Node) {
	s.nodes, s.offset, s.seen = nodes, 0, 0
	s.rand, s.order, s.moved = nil, nil, nil
}

// SetShuffledNodes replaces the node list with a uniformly random order of
// nodes drawn from r as the nodes are visited. nodes is only read.
func (s *SourceIterator) SetShuffledNodes(nodes []*structs.Node, r *rand.Rand) {
	s.SetNodes(nodes)
	s.rand = r
}

// at returns the node at position i of the visiting order; positions are
// asked for in increasing order from 0, so i <= len(s.order).
func (s *SourceIterator) at(i int) *structs.Node {
	if s.rand == nil {
		return s.nodes[i]
	}
	if i < len(s.order) {
		return s.order[i]
	}
	// Fisher-Yates step for position i: swap it with a uniformly chosen
	// position of the undrawn rest [i, n).
	n := len(s.nodes)
	j := i + s.rand.IntN(n-i)
	pick := s.undrawn(j)
	if j != i {
		if s.moved == nil {
			s.moved = make(map[int]*structs.Node)
		}
		s.moved[j] = s.undrawn(i)
	}
	delete(s.moved, i)
	if s.order == nil {
		s.order = make([]*structs.Node, 0, min(n, 64))
	}
	s.order = append(s.order, pick)
	return pick
}

func (s *SourceIterator) undrawn(i int) *structs.Node {
	if n, ok := s.moved[i]; ok {
		return n
	}
	return s.nodes[i]
}

// Next returns the next node or nil once every node was visited.
func (s *SourceIterator) Next() *structs.Node {
	if s.seen >= len(s.nodes) {
		return nil
	}
	n := s.at(s.offset)
	s.offset = (s.offset + 1) % len(s.nodes)
	s.seen++
	s.ctx.metrics.NodesEvaluated++
	return n
}

// Reset starts a new pass (from the current offset).
func (s *SourceIterator) Reset() { s.seen = 0 }

// FeasibilityIterator drops nodes that fail the job's or the group's
// checks (drivers, constraints), memoising outcomes per computed class.
type FeasibilityIterator struct {
	ctx    *Context
	source NodeIterator

	job         *structs.Job
	jobCheckers []Checker
	jobEscaped  bool

	tg         *structs.TaskGroup
	tgCheckers []Checker
	tgEscaped  bool

	// volumes checks the group's host volumes on every node: per_alloc
	// volumes depend on the allocation placed, so the outcome is never
	// memoised by class (nil: the group asks for none).
	volumes *hostVolumeChecker

	// last is the outcome for the class of the previous node, while
	// neither the job's nor the group's checks escape the class memo:
	// nodes of one class come in runs (a cluster has a few classes), and
	// comparing the class with the last one costs less than the memo's
	// map lookups for every node a selection looks at.
	last lastClass

	// wrap, when set, wraps every checker built (tests count calls).
	wrap func(Checker) Checker
}

// lastClass is a class and its job-and-group outcome (valid: computed).
type lastClass struct {
	valid bool
	class string
	st    classStatus
}

func (f *FeasibilityIterator) checker(c Checker) Checker {
	if f.wrap != nil {
		return f.wrap(c)
	}
	return c
}

// NewFeasibilityIterator wraps source.
func NewFeasibilityIterator(ctx *Context, source NodeIterator) *FeasibilityIterator {
	return &FeasibilityIterator{ctx: ctx, source: source}
}

// SetJob sets the job whose constraints apply.
func (f *FeasibilityIterator) SetJob(job *structs.Job) {
	f.job, f.tg, f.last = job, nil, lastClass{}
	f.jobCheckers = []Checker{f.checker(&constraintChecker{ctx: f.ctx, cons: job.Constraints})}
	f.jobEscaped = false
	for _, c := range job.Constraints {
		if escapesClass(c) {
			f.jobEscaped = true
		}
	}
	if f.jobEscaped {
		f.ctx.eligibility.jobEscape = true
	}
}

// SetTaskGroup sets the group whose drivers and constraints apply.
//
// Every selection sets its group; setting the group already set keeps the
// checkers built for it (they depend on the group alone).
func (f *FeasibilityIterator) SetTaskGroup(tg *structs.TaskGroup) {
	if tg == f.tg && f.tgCheckers != nil {
		return
	}
	f.tg, f.last = tg, lastClass{}
	cons := append([]*structs.Constraint(nil), tg.Constraints...)
	var drivers []string
	seen := map[string]bool{}
	for _, t := range tg.Tasks {
		cons = append(cons, t.Constraints...)
		if t.Driver != "" && !seen[t.Driver] {
			seen[t.Driver] = true
			drivers = append(drivers, t.Driver)
		}
	}
	f.tgCheckers = []Checker{
		f.checker(&driverChecker{drivers: drivers}),
		f.checker(&constraintChecker{ctx: f.ctx, cons: cons}),
	}
	if groupNeedsBridge(tg) {
		f.tgCheckers = append(f.tgCheckers, f.checker(&networkChecker{bridge: true}))
	}
	if asks := groupDeviceAsks(tg); len(asks) > 0 {
		f.tgCheckers = append(f.tgCheckers, f.checker(&deviceChecker{ctx: f.ctx, asks: asks}))
	}
	f.volumes = nil
	if asks := groupHostVolumes(tg); len(asks) > 0 {
		f.volumes = &hostVolumeChecker{asks: asks}
	}
	f.tgEscaped = false
	for _, c := range cons {
		if escapesClass(c) {
			f.tgEscaped = true
		}
	}
	if f.tgEscaped {
		f.ctx.eligibility.tgEscape[tg.Name] = true
	}
}

// Next returns the next feasible node.
func (f *FeasibilityIterator) Next() *structs.Node {
	for {
		n := f.source.Next()
		if n == nil {
			return nil
		}
		if ok, reason := f.check(n, f.ctx.ComputedClass(n)); !ok {
			f.ctx.filterNode(n, reason)
			continue
		}
		if f.volumes != nil {
			if ok, reason := f.volumes.Feasible(n); !ok {
				f.ctx.filterNode(n, reason)
				continue
			}
		}
		return n
	}
}

// check runs the job's and then the group's checks on n, of the class.
func (f *FeasibilityIterator) check(n *structs.Node, class string) (bool, string) {
	if f.last.valid && class == f.last.class {
		return f.last.st.eligible, f.last.st.reason
	}
	ok, reason := f.checkJob(n, class)
	if ok {
		ok, reason = f.checkGroup(n, class)
	}
	if !f.jobEscaped && !f.tgEscaped {
		f.last = lastClass{valid: true, class: class, st: classStatus{eligible: ok, reason: reason}}
	}
	return ok, reason
}

// Reset resets the source.
func (f *FeasibilityIterator) Reset() { f.source.Reset() }

// SetAllocName sets the name of the allocation being placed ("job.group[2]"):
// per_alloc host volumes resolve to their source with its index.
func (f *FeasibilityIterator) SetAllocName(name string) {
	if f.volumes != nil {
		f.volumes.allocName = name
	}
}

func (f *FeasibilityIterator) checkJob(n *structs.Node, class string) (bool, string) {
	elig := f.ctx.eligibility
	if !f.jobEscaped {
		if st, ok := elig.job[class]; ok {
			return st.eligible, st.reason
		}
	}
	st := runCheckers(f.jobCheckers, n)
	if !f.jobEscaped {
		elig.job[class] = st
	}
	return st.eligible, st.reason
}

func (f *FeasibilityIterator) checkGroup(n *structs.Node, class string) (bool, string) {
	elig := f.ctx.eligibility
	memo := elig.groups[f.tg.Name]
	if memo == nil {
		memo = make(map[string]classStatus)
		elig.groups[f.tg.Name] = memo
	}
	if !f.tgEscaped {
		if st, ok := memo[class]; ok {
			return st.eligible, st.reason
		}
	}
	st := runCheckers(f.tgCheckers, n)
	if !f.tgEscaped {
		memo[class] = st
	}
	return st.eligible, st.reason
}

func runCheckers(checkers []Checker, n *structs.Node) classStatus {
	for _, c := range checkers {
		if ok, reason := c.Feasible(n); !ok {
			return classStatus{reason: reason}
		}
	}
	return classStatus{eligible: true}
}

// hasDriver reports whether the node runs the driver: a detected, healthy
// driver entry, or (older clients) a truthy "driver.<name>" attribute.
func hasDriver(n *structs.Node, name string) bool {
	if info, ok := n.Drivers[name]; ok && info != nil {
		return info.Detected && info.Healthy
	}
	v, ok := n.Attributes["driver."+name]
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// DistinctHostsIterator drops nodes that already hold (or are proposed to
// hold) an allocation of the same job (job-level constraint) or of the
// same group (group-level constraint).
type DistinctHostsIterator struct {
	ctx        *Context
	source     NodeIterator
	job        *structs.Job
	tg         *structs.TaskGroup
	jobDistint bool
	tgDistinct bool
}

// NewDistinctHostsIterator wraps source.
func NewDistinctHostsIterator(ctx *Context, source NodeIterator) *DistinctHostsIterator {
	return &DistinctHostsIterator{ctx: ctx, source: source}
}

func distinctHosts(cons []*structs.Constraint) bool {
	for _, c := range cons {
		if c.Operand == OpDistinctHosts {
			if b, err := strconv.ParseBool(c.RTarget); c.RTarget == "" || (err == nil && b) {
				return true
			}
		}
	}
	return false
}

// SetJob sets the job.
func (d *DistinctHostsIterator) SetJob(job *structs.Job) {
	d.job = job
	d.jobDistint = distinctHosts(job.Constraints)
}

// SetTaskGroup sets the group.
func (d *DistinctHostsIterator) SetTaskGroup(tg *structs.TaskGroup) {
	d.tg = tg
	d.tgDistinct = distinctHosts(tg.Constraints)
}

// Next returns the next node that keeps hosts distinct.
func (d *DistinctHostsIterator) Next() *structs.Node {
	for {
		n := d.source.Next()
		if n == nil || (!d.jobDistint && !d.tgDistinct) {
			return n
		}
		proposed, err := d.ctx.ProposedAllocs(n)
		if err != nil {
			d.ctx.Logger.Error("failed to read proposed allocs", "node_id", n.ID, "error", err)
			continue
		}
		clash := false
		for _, a := range proposed {
			if a.JobID == d.job.ID && a.Namespace == d.job.Namespace && (d.jobDistint || a.TaskGroup == d.tg.Name) {
				clash = true
				break
			}
		}
		if clash {
			d.ctx.filterNode(n, OpDistinctHosts)
			continue
		}
		return n
	}
}

// Reset resets the source.
func (d *DistinctHostsIterator) Reset() { d.source.Reset() }
