package feasible

import (
	"math"
	"strings"
	"unique"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Scheduling algorithms.
const (
	AlgorithmBinpack = "binpack"
	AlgorithmSpread  = "spread"
)

// binPackingMaxFitScore normalises the fit score into [0, 1].
const binPackingMaxFitScore = 18.0

// RankedNode is a feasible node with its scores and the resources a
// placement on it would receive.
type RankedNode struct {
	Node       *structs.Node
	FinalScore float64
	// Scores are the scores in the order given; ScoreMap names them.
	Scores []float64
	names  []string
	// Inline room for the usual number of scores: no allocation per
	// candidate node for them.
	scoreBuf [4]float64
	nameBuf  [4]string

	TaskResources map[string]*structs.AllocatedTaskResources
	Shared        structs.AllocatedSharedResources
	// Proposed are the allocations on the node if the plan commits,
	// excluding the one being placed (and those it preempts).
	Proposed []*structs.Allocation
	// Preempted are the allocations that must be evicted for the
	// placement to fit; empty when it fits as things are.
	Preempted []*structs.Allocation

	// live and extra are Proposed as the node's allocations in state
	// (their group counts memoised) followed by the plan's placements,
	// when Proposed is exactly that (live nil otherwise).
	live  *state.LiveAllocs
	extra []*structs.Allocation

	// plainTasks: TaskResources are built by BinPackIterator.complete
	// once the option is chosen; offers (one per group network) become
	// Shared's ports and networks there.
	plainTasks bool
	offers     []structs.AllocatedPorts
}

func (r *RankedNode) addScore(name string, s float64) {
	if r.Scores == nil {
		r.Scores, r.names = r.scoreBuf[:0], r.nameBuf[:0]
	}
	r.Scores = append(r.Scores, s)
	r.names = append(r.names, name)
}

// ScoreMap returns the scores by name (a later score of the same name
// wins), or nil when there are none. It builds a new map on every call.
func (r *RankedNode) ScoreMap() map[string]float64 {
	if len(r.names) == 0 {
		return nil
	}
	m := make(map[string]float64, len(r.names))
	for i, name := range r.names {
		m[name] = r.Scores[i]
	}
	return m
}

// RankIterator yields ranked nodes.
type RankIterator interface {
	Next() *RankedNode
	Reset()
}

// FeasibleRankIterator turns feasible nodes into ranked options.
type FeasibleRankIterator struct {
	source NodeIterator

	// reuse recycles the options of one selection in the next (after
	// Reset): the Stack sets it, as an option is only used until the
	// next Select. pool holds them, used counts those handed out.
	reuse bool
	pool  []*RankedNode
	used  int
}

// Next wraps the next feasible node.
func (f *FeasibleRankIterator) Next() *RankedNode {
	n := f.source.Next()
	if n == nil {
		return nil
	}
	if !f.reuse {
		return &RankedNode{Node: n}
	}
	if f.used == len(f.pool) {
		// Grow by a slab: one allocation for the next options.
		slab := make([]RankedNode, max(16, len(f.pool)))
		for i := range slab {
			f.pool = append(f.pool, &slab[i])
		}
	}
	opt := f.pool[f.used]
	f.used++
	*opt = RankedNode{Node: n}
	return opt
}

// Reset resets the source and, when reusing, takes back every option.
func (f *FeasibleRankIterator) Reset() {
	f.used = 0
	f.source.Reset()
}

// BinPackIterator computes whether the group fits on each node (CPU,
// memory, disk, ports with a fresh index over the proposed allocations)
// and scores the fit.
type BinPackIterator struct {
	ctx       *Context
	source    RankIterator
	tg        *structs.TaskGroup
	algorithm string
	// evict enables preemption of allocations of jobs at least 10
	// priority points below priority when the group does not fit.
	evict    bool
	priority int
	// oversub grants tasks their memory_max (the scheduler configuration's
	// memory oversubscription); off, they get their memory only.
	oversub bool

	// ask describes tg (recomputed when tg changes): groups that ask for
	// no network and no device fit by arithmetic alone.
	ask groupAsk
}

// groupAsk is what one allocation of a group asks for, computed once per
// group rather than once per candidate node.
type groupAsk struct {
	tg      *structs.TaskGroup
	plain   bool // no networks, no devices, no cores
	devices bool // some task asks for devices
	cores   bool // some task asks for reserved cores
	disk    int64
	need    structs.ComparableResources // the candidate alloc's Comparable()
}

func (b *BinPackIterator) groupAsk() *groupAsk {
	if b.ask.tg == b.tg {
		return &b.ask
	}
	a := groupAsk{tg: b.tg}
	if b.tg.EphemeralDisk != nil {
		a.disk = int64(b.tg.EphemeralDisk.SizeMB)
	}
	for _, t := range b.tg.Tasks {
		if t.Resources != nil && len(t.Resources.Devices) > 0 {
			a.devices = true
		}
		if t.Resources != nil && t.Resources.Cores > 0 {
			a.cores = true
		}
	}
	a.plain = len(b.tg.Networks) == 0 && !a.devices && !a.cores
	ar := structs.AllocatedResources{Tasks: plainTaskResources(b.tg, b.oversub), Shared: structs.AllocatedSharedResources{DiskMB: a.disk}}
	a.need = ar.Comparable()
	b.ask = a
	return &b.ask
}

// plainTaskResources is what each task of a group without device asks
// receives (memory_max only with memory oversubscription).
func plainTaskResources(tg *structs.TaskGroup, oversub bool) map[string]*structs.AllocatedTaskResources {
	tasks := make(map[string]*structs.AllocatedTaskResources, len(tg.Tasks))
	for _, t := range tg.Tasks {
		tr := &structs.AllocatedTaskResources{}
		if r := t.Resources; r != nil {
			tr.Cpu.CpuShares = int64(r.CPU)
			tr.Memory.MemoryMB = int64(r.MemoryMB)
			if oversub {
				tr.Memory.MemoryMaxMB = int64(r.MemoryMaxMB)
			}
		}
		tasks[t.Name] = tr
	}
	return tasks
}

// complete fills in what the bin-packer left for the chosen option only:
// the task resources of a plain group (the same on every node, so not
// built for each candidate).
func (b *BinPackIterator) complete(opt *RankedNode) {
	if opt == nil {
		return
	}
	if opt.plainTasks {
		opt.TaskResources = plainTaskResources(b.tg, b.oversub)
		opt.plainTasks = false
	}
	if opt.offers != nil {
		for i, na := range b.tg.Networks {
			opt.Shared.Ports = append(opt.Shared.Ports, opt.offers[i]...)
			opt.Shared.Networks = append(opt.Shared.Networks, networkFromOffer(na, opt.offers[i]))
		}
		opt.offers = nil
	}
}

// Next returns the next node with room for the group.
func (b *BinPackIterator) Next() *RankedNode {
	for {
		opt := b.source.Next()
		if opt == nil {
			return nil
		}
		if b.fit(opt) {
			return opt
		}
	}
}

// Reset resets the source.
func (b *BinPackIterator) Reset() { b.source.Reset() }

func (b *BinPackIterator) fit(opt *RankedNode) bool {
	n := opt.Node
	u, err := b.ctx.proposedUsage(n)
	if err != nil {
		b.ctx.Logger.Error("failed to read proposed allocs", "node_id", n.ID, "error", err)
		return false
	}
	f := b.tryFit(n, u)
	if !f.ok && b.evict && f.preemptible {
		if victims := choosePreemptions(b.preemptRequest(n, f), u.allocs); len(victims) > 0 {
			if g := b.tryFit(n, usageOf(without(u.allocs, victims))); g.ok {
				f = g
				opt.Preempted = victims
			}
		}
	}
	if !f.ok {
		b.ctx.exhaustedNode(n, f.dim)
		return false
	}
	opt.TaskResources = f.tasks
	opt.plainTasks = f.plainTasks
	opt.offers = f.offers
	opt.Shared = f.shared
	opt.Proposed = f.proposed
	if opt.Preempted == nil && u.exact {
		opt.live, opt.extra = u.node.live, u.extra
	}
	opt.addScore("binpack", fitScore(n.Comparable(), f.used, b.algorithm))
	if f.deviceScore != 0 {
		opt.addScore("devices", f.deviceScore)
	}
	return true
}

// fitResult is the outcome of fitting the group onto a node beside a set
// of allocations.
type fitResult struct {
	ok       bool
	dim      string // what ran out
	proposed []*structs.Allocation
	tasks    map[string]*structs.AllocatedTaskResources
	// plainTasks says tasks were left for complete to build.
	plainTasks bool
	offers     []structs.AllocatedPorts // granted ports, per group network
	shared     structs.AllocatedSharedResources
	used       structs.ComparableResources // demand including the group
	// deviceScore is the device-affinity score of the chosen instances.
	deviceScore float64
	// preemptible is false when evicting allocations cannot help (the
	// node's own state is inconsistent or its network invalid).
	preemptible bool
}

// tryFit fits the group beside the proposed allocations. It records
// nothing in the metrics.
func (b *BinPackIterator) tryFit(n *structs.Node, u proposedUsage) fitResult {
	if ask := b.groupAsk(); ask.plain && !u.Ports && !u.Devices {
		return b.tryFitPlain(n, u, ask)
	}
	return b.tryFitIndexed(n, u)
}

// sumsExhausted is what AllocsFit checks on sums already known: the
// node's allocation limit, then CPU, memory and disk with the candidate
// (used) added. It returns the exhausted dimension, or "".
func sumsExhausted(n *structs.Node, u proposedUsage, used structs.ComparableResources) string {
	_, dim := structs.AllocsUsage{Used: used, Live: u.Live + 1}.FitsTotals(n)
	return dim
}

// tryFitPlain fits a group that asks for no network and no device beside
// allocations that hold none: no port index is needed, only the sums. It
// decides exactly as tryFitIndexed would: the node's network must be
// valid, then max allocs, CPU, memory and disk.
func (b *BinPackIterator) tryFitPlain(n *structs.Node, u proposedUsage, ask *groupAsk) fitResult {
	res := fitResult{proposed: u.allocs}
	if err := u.networkErr(n); err != nil {
		b.ctx.Logger.Warn("node network is invalid", "node_id", n.ID, "error", err)
		res.dim = "network: invalid node network"
		return res
	}
	res.preemptible = true
	res.used = u.Used
	res.used.Add(ask.need)
	if res.dim = sumsExhausted(n, u, res.used); res.dim != "" {
		return res
	}
	res.ok = true
	res.plainTasks = true
	res.shared = structs.AllocatedSharedResources{DiskMB: ask.disk}
	return res
}

// tryFitIndexed fits the group beside the proposed allocations: ports on a
// fresh index, devices, then CPU, memory and disk. The granted ports are
// kept as offers; their network records are built by complete, for the
// chosen node only.
func (b *BinPackIterator) tryFitIndexed(n *structs.Node, u proposedUsage) fitResult {
	ask := b.groupAsk()
	proposed := u.allocs
	res := fitResult{proposed: proposed}
	var (
		idx     *structs.NetworkIndex
		netErr  error
		collide bool
		reason  string
	)
	kept := b.keptPortIndex(n, u)
	if kept != nil {
		idx, netErr, collide, reason = kept.idx, kept.err, kept.collide, kept.reason
		// The index is the node's for the whole pass: take back the
		// ports this trial marks, whatever its outcome.
		defer kept.undo()
	} else {
		// First try of the node in this state: a throw-away index
		// (it stays off the heap).
		idx = structs.NewNetworkIndex()
		idx.Rand = b.ctx.Rand
		if netErr = idx.SetNode(n); netErr == nil && u.Ports {
			collide, reason = idx.AddAllocs(proposed)
		}
	}
	if netErr != nil {
		b.ctx.Logger.Warn("node network is invalid", "node_id", n.ID, "error", netErr)
		res.dim = "network: invalid node network"
		return res
	}
	if collide {
		// The node's own state is inconsistent; never add to it.
		b.ctx.Logger.Error("port collision among existing allocations", "node_id", n.ID, "reason", reason)
		res.dim = "network: port collision"
		return res
	}
	res.preemptible = true

	// Devices are granted per task; without device asks every task gets
	// the same resources on any node and complete builds them.
	var tasks map[string]*structs.AllocatedTaskResources
	var devs *deviceAllocator
	var cores *coreAllocator
	if ask.devices || ask.cores {
		tasks = make(map[string]*structs.AllocatedTaskResources, len(b.tg.Tasks))
		for _, t := range b.tg.Tasks {
			tr := &structs.AllocatedTaskResources{}
			if r := t.Resources; r != nil {
				tr.Cpu.CpuShares = int64(r.CPU)
				tr.Memory.MemoryMB = int64(r.MemoryMB)
				if b.oversub {
					tr.Memory.MemoryMaxMB = int64(r.MemoryMaxMB)
				}
				if r.Cores > 0 {
					if cores == nil {
						cores = newCoreAllocator(n, proposed)
					}
					ids := cores.take(r.Cores)
					if ids == nil {
						// Evicting allocations to free cores is not
						// supported (as devices).
						res.dim, res.preemptible = structs.DimensionCores, false
						return res
					}
					tr.Cpu.ReservedCores = ids
					tr.Cpu.CpuShares = int64(len(ids)) * n.MHzPerCore()
				}
				for _, da := range r.Devices {
					if devs == nil {
						devs = newDeviceAllocator(b.ctx, n, proposed)
					}
					grant, dim := devs.assign(da)
					if grant == nil {
						// Evicting allocations to free devices is not
						// supported; CPU and memory preemption cannot help.
						res.dim, res.preemptible = dim, false
						return res
					}
					tr.Devices = append(tr.Devices, grant)
				}
			}
			tasks[t.Name] = tr
		}
	}
	if devs != nil {
		res.deviceScore = devs.affinityScore()
	}
	// Devices and ports add nothing to the comparable demand; reserved
	// cores count their MHz on this node.
	res.used = u.Used
	if cores != nil {
		ar := structs.AllocatedResources{Tasks: tasks, Shared: structs.AllocatedSharedResources{DiskMB: ask.disk}}
		res.used.Add(ar.Comparable())
	} else {
		res.used.Add(ask.need)
	}

	var offers []structs.AllocatedPorts
	for _, na := range b.tg.Networks {
		offer, err := idx.AssignPorts(na)
		if err != nil {
			res.dim = networkDimension(err)
			return res
		}
		if kept != nil {
			kept.note(offer)
		}
		if collide, reason := idx.AddReserved(offer); collide {
			b.ctx.Logger.Error("port offer collided with index", "node_id", n.ID, "reason", reason)
			res.dim = "network: port collision"
			return res
		}
		offers = append(offers, offer)
	}

	if devs != nil || u.Devices {
		// Device instances must also be checked against each other.
		candidate := &structs.Allocation{
			ID: "(candidate)",
			AllocatedResources: &structs.AllocatedResources{Tasks: tasks,
				Shared: structs.AllocatedSharedResources{DiskMB: ask.disk}},
		}
		all := make([]*structs.Allocation, 0, len(proposed)+1)
		all = append(append(all, proposed...), candidate)
		fit, dim, used, err := structs.AllocsFit(n, all, idx)
		res.used = used
		if err != nil || !fit {
			res.dim = dim
			return res
		}
	} else if res.dim = sumsExhausted(n, u, res.used); res.dim != "" {
		return res
	}
	res.ok = true
	res.tasks = tasks
	res.plainTasks = tasks == nil
	res.offers = offers
	res.shared = structs.AllocatedSharedResources{DiskMB: ask.disk}
	return res
}

// portIndex is a port index over a node and its proposed allocations,
// kept for a pass.
type portIndex struct {
	idx     *structs.NetworkIndex
	err     error  // SetNode failed: the node's network is invalid
	collide bool   // the proposed allocations collide
	reason  string // of the collision

	// marked lists the ports a trial set that were free before: the
	// index is kept for the pass and trials undo their marks.
	marked []structs.AllocatedPortMapping
}

// keptPortIndex returns the node's port index kept for the pass, or nil
// when a fresh one is to be used. A node tried a second time while the
// plan leaves it unchanged keeps its index from then on (a node of a large
// job is tried many times per pass); either way the index holds exactly
// what a fresh index over u would, so ports are chosen (and drawn from the
// context's random source) as with a fresh index.
func (b *BinPackIterator) keptPortIndex(n *structs.Node, u proposedUsage) *portIndex {
	na := u.node
	if na == nil {
		return nil
	}
	if !na.portTried || na.portAt != u.at {
		na.portIdx, na.portTried, na.portAt = nil, true, u.at
		return nil
	}
	if na.portIdx != nil {
		na.portIdx.marked = na.portIdx.marked[:0]
		return na.portIdx
	}
	pi := &portIndex{idx: structs.NewNetworkIndex()}
	pi.build(b.ctx, n, u)
	na.portIdx = pi
	return pi
}

// build loads n and the proposed allocations u into pi's empty index.
func (pi *portIndex) build(ctx *Context, n *structs.Node, u proposedUsage) {
	pi.idx.Rand = ctx.Rand
	if pi.err = pi.idx.SetNode(n); pi.err == nil && u.Ports {
		pi.collide, pi.reason = pi.idx.AddAllocs(u.allocs)
	}
}

// note records, before offer is marked, which of its ports are free.
func (pi *portIndex) note(offer structs.AllocatedPorts) {
	for _, p := range offer {
		if p.Value < 0 || p.Value >= structs.MaxValidPort {
			continue
		}
		if used := pi.idx.UsedPorts[p.HostIP]; used == nil || !used.Check(uint(p.Value)) {
			pi.marked = append(pi.marked, p)
		}
	}
}

// undo frees the ports the trial marked.
func (pi *portIndex) undo() {
	for _, p := range pi.marked {
		if used := pi.idx.UsedPorts[p.HostIP]; used != nil {
			used.Unset(uint(p.Value))
		}
	}
	pi.marked = pi.marked[:0]
}

// preemptRequest describes the shortfall of a failed fit.
func (b *BinPackIterator) preemptRequest(n *structs.Node, f fitResult) preemptRequest {
	need := f.used
	subtract(&need, n.Comparable())
	return preemptRequest{priority: b.priority, need: need, ports: staticPorts(b.tg)}
}

// without returns list minus drop.
func without(list, drop []*structs.Allocation) []*structs.Allocation {
	gone := make(map[string]bool, len(drop))
	for _, a := range drop {
		gone[a.ID] = true
	}
	out := make([]*structs.Allocation, 0, len(list))
	for _, a := range list {
		if !gone[a.ID] {
			out = append(out, a)
		}
	}
	return out
}

// networkDimension is the DimensionExhausted key of a port failure, as
// Nomad spells it: "network: reserved port collision http=8080" names the
// static port; dynamic failures collapse into one key so a range that is
// full on many nodes reads as one reason, not one per label.
func networkDimension(err error) string {
	msg := err.Error()
	if strings.Contains(msg, "dynamic port selection failed") {
		return "network: dynamic port selection failed"
	}
	return "network: " + msg
}

// networkFromOffer records the ask with its granted values, for clients
// that read the group network rather than the port list.
func networkFromOffer(ask *structs.NetworkResource, offer structs.AllocatedPorts) *structs.NetworkResource {
	nr := *ask
	nr.ReservedPorts = nil
	nr.DynamicPorts = nil
	for _, p := range ask.ReservedPorts {
		if m, ok := offer.Get(p.Label); ok {
			p.Value, p.To = m.Value, m.To
			if nr.IP == "" {
				nr.IP = m.HostIP
			}
		}
		nr.ReservedPorts = append(nr.ReservedPorts, p)
	}
	for _, p := range ask.DynamicPorts {
		if m, ok := offer.Get(p.Label); ok {
			p.Value, p.To = m.Value, m.To
			if nr.IP == "" {
				nr.IP = m.HostIP
			}
		}
		nr.DynamicPorts = append(nr.DynamicPorts, p)
	}
	return &nr
}

// fitScore scores how full the node would be: with binpack fuller nodes
// score higher, with spread emptier ones do. Result in [0, 1].
func fitScore(avail, used structs.ComparableResources, algorithm string) float64 {
	free := func(u, a int64) float64 {
		if a <= 0 {
			return 0
		}
		return 1 - float64(u)/float64(a)
	}
	total := math.Pow(10, free(used.CPU, avail.CPU)) + math.Pow(10, free(used.MemoryMB, avail.MemoryMB))
	var s float64
	if algorithm == AlgorithmSpread {
		s = total - 2
	} else {
		s = 20 - total
	}
	s = math.Max(0, math.Min(binPackingMaxFitScore, s))
	return s / binPackingMaxFitScore
}

// JobAntiAffinityIterator penalises nodes already running the same group.
type JobAntiAffinityIterator struct {
	source RankIterator
	job    *structs.Job
	tg     *structs.TaskGroup

	// group is the handle of tg's group (of job), computed for groupOf.
	group   unique.Handle[state.AllocGroup]
	groupOf *structs.TaskGroup
}

// Next scores the next option.
func (j *JobAntiAffinityIterator) Next() *RankedNode {
	opt := j.source.Next()
	if opt == nil {
		return nil
	}
	collisions := 0
	proposed := opt.Proposed
	if opt.live != nil {
		if j.groupOf != j.tg {
			j.group = unique.Make(state.AllocGroup{Namespace: j.job.Namespace, JobID: j.job.ID, TaskGroup: j.tg.Name})
			j.groupOf = j.tg
		}
		collisions, proposed = opt.live.CountGroup(j.group), opt.extra
	}
	for _, a := range proposed {
		if a.JobID == j.job.ID && a.Namespace == j.job.Namespace && a.TaskGroup == j.tg.Name {
			collisions++
		}
	}
	if collisions > 0 && j.tg.Count > 0 {
		opt.addScore("job-anti-affinity", -float64(collisions+1)/float64(j.tg.Count))
	}
	return opt
}

// Reset resets the source.
func (j *JobAntiAffinityIterator) Reset() { j.source.Reset() }

// PenaltyIterator penalises nodes where the replaced allocation failed.
type PenaltyIterator struct {
	source  RankIterator
	penalty map[string]struct{}
}

// Next scores the next option.
func (p *PenaltyIterator) Next() *RankedNode {
	opt := p.source.Next()
	if opt == nil {
		return nil
	}
	if _, ok := p.penalty[opt.Node.ID]; ok {
		opt.addScore("node-reschedule-penalty", -1)
	}
	return opt
}

// Reset resets the source.
func (p *PenaltyIterator) Reset() { p.source.Reset() }

// NormalizeIterator sets FinalScore to the mean of the scores.
type NormalizeIterator struct {
	ctx    *Context
	source RankIterator
}

// Next normalises the next option.
func (n *NormalizeIterator) Next() *RankedNode {
	opt := n.source.Next()
	if opt == nil {
		return nil
	}
	if len(opt.Scores) > 0 {
		sum := 0.0
		for _, s := range opt.Scores {
			sum += s
		}
		opt.FinalScore = sum / float64(len(opt.Scores))
	}
	n.ctx.recordScore(opt)
	return opt
}

// Reset resets the source.
func (n *NormalizeIterator) Reset() { n.source.Reset() }

// maxScoreMeta bounds how many node scores a metric keeps.
const maxScoreMeta = 5

func (c *Context) recordScore(opt *RankedNode) {
	c.explainScored(opt)
	m := c.metrics
	if len(m.ScoreMetaData) >= maxScoreMeta {
		worst := 0
		for i, s := range m.ScoreMetaData {
			if s.NormScore < m.ScoreMetaData[worst].NormScore {
				worst = i
			}
		}
		if opt.FinalScore < m.ScoreMetaData[worst].NormScore {
			// It would be the one dropped: do not build its entry.
			return
		}
		c.dropPending(m.ScoreMetaData[worst])
		m.ScoreMetaData = append(m.ScoreMetaData[:worst], m.ScoreMetaData[worst+1:]...)
	}
	meta := &structs.NodeScoreMeta{NodeID: opt.Node.ID, NormScore: opt.FinalScore}
	m.ScoreMetaData = append(m.ScoreMetaData, meta)
	if len(opt.names) > len(pendingScores{}.names) {
		meta.Scores = opt.ScoreMap()
		return
	}
	// Most entries are displaced by better nodes before anyone reads the
	// metrics: name their scores only when they are read (Metrics). Every
	// pending entry is one of the (at most maxScoreMeta) kept, so a free
	// slot exists.
	for i := range c.pending {
		if p := &c.pending[i]; p.meta == nil {
			p.meta, p.n = meta, len(opt.names)
			copy(p.names[:], opt.names)
			copy(p.scores[:], opt.Scores)
			return
		}
	}
	meta.Scores = opt.ScoreMap()
}

// pendingScores are the scores of a kept NodeScoreMeta whose Scores map is
// not built yet; a nil meta marks a free slot.
type pendingScores struct {
	meta   *structs.NodeScoreMeta
	n      int
	names  [4]string
	scores [4]float64
}

func (c *Context) dropPending(meta *structs.NodeScoreMeta) {
	for i := range c.pending {
		if c.pending[i].meta == meta {
			c.pending[i].meta = nil
			return
		}
	}
}

// flushScores builds the Scores maps of the pending entries.
func (c *Context) flushScores() {
	for i := range c.pending {
		p := &c.pending[i]
		if p.meta == nil {
			continue
		}
		if p.n > 0 {
			p.meta.Scores = make(map[string]float64, p.n)
			for j := 0; j < p.n; j++ {
				p.meta.Scores[p.names[j]] = p.scores[j]
			}
		}
		p.meta = nil
	}
}

// LimitIterator stops after limit options. Options scoring at or below
// the threshold are set aside (at most maxSkip of them) in the hope of a
// better one, and used only if the source runs dry.
type LimitIterator struct {
	source    RankIterator
	limit     int
	maxSkip   int
	threshold float64
	seen      int
	skipped   []*RankedNode
}

// Next returns the next option within the limit.
func (l *LimitIterator) Next() *RankedNode {
	if l.seen >= l.limit {
		return nil
	}
	opt := l.source.Next()
	for opt != nil && opt.FinalScore <= l.threshold && len(l.skipped) < l.maxSkip {
		l.skipped = append(l.skipped, opt)
		opt = l.source.Next()
	}
	if opt == nil && len(l.skipped) > 0 {
		opt, l.skipped = l.skipped[0], l.skipped[1:]
	}
	if opt != nil {
		l.seen++
	}
	return opt
}

// Reset starts a new selection.
func (l *LimitIterator) Reset() {
	l.seen = 0
	l.skipped = l.skipped[:0]
	l.source.Reset()
}

// MaxScoreIterator drains its source and returns the best option.
type MaxScoreIterator struct{ source RankIterator }

// Next returns the best option, or nil if there is none.
func (m *MaxScoreIterator) Next() *RankedNode {
	var best *RankedNode
	for opt := m.source.Next(); opt != nil; opt = m.source.Next() {
		if best == nil || opt.FinalScore > best.FinalScore {
			best = opt
		}
	}
	return best
}

// Reset resets the source.
func (m *MaxScoreIterator) Reset() { m.source.Reset() }
