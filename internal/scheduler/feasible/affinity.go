package feasible

import (
	"math"

	"github.com/drover-project/drover/internal/structs"
)

// defaultWeight is the weight of an affinity or spread that names none.
const defaultWeight = 50

func weightOf(w *int8) float64 {
	if w == nil {
		return defaultWeight
	}
	return float64(*w)
}

// groupAffinities returns the affinities that apply to tg: the job's, the
// group's and those of its tasks.
func groupAffinities(job *structs.Job, tg *structs.TaskGroup) []*structs.Affinity {
	var out []*structs.Affinity
	if job != nil {
		out = append(out, job.Affinities...)
	}
	out = append(out, tg.Affinities...)
	for _, t := range tg.Tasks {
		out = append(out, t.Affinities...)
	}
	return out
}

// NodeAffinityIterator scores nodes by the affinities they match:
// sum(weights of matching affinities) / sum(|weights|), in [-1, 1]. A node
// matching nothing gets no score (so it is not dragged towards zero).
type NodeAffinityIterator struct {
	ctx        *Context
	source     RankIterator
	job        *structs.Job
	affinities []*structs.Affinity
	sumWeights float64
}

// SetJob sets the job.
func (a *NodeAffinityIterator) SetJob(job *structs.Job) { a.job = job }

// SetTaskGroup collects the affinities that apply to tg.
func (a *NodeAffinityIterator) SetTaskGroup(tg *structs.TaskGroup) {
	a.affinities = groupAffinities(a.job, tg)
	a.sumWeights = 0
	for _, af := range a.affinities {
		a.sumWeights += math.Abs(weightOf(af.Weight))
	}
}

// Next scores the next option.
func (a *NodeAffinityIterator) Next() *RankedNode {
	opt := a.source.Next()
	if opt == nil || len(a.affinities) == 0 || a.sumWeights == 0 {
		return opt
	}
	total := 0.0
	for _, af := range a.affinities {
		if a.matches(af, opt.Node) {
			total += weightOf(af.Weight)
		}
	}
	if total != 0 {
		opt.addScore("node-affinity", total/a.sumWeights)
	}
	return opt
}

func (a *NodeAffinityIterator) matches(af *structs.Affinity, n *structs.Node) bool {
	l, lok := resolveTarget(af.LTarget, n)
	r, rok := resolveTarget(af.RTarget, n)
	return a.ctx.checkOperand(af.Operand, l, r, lok, rok)
}

// Reset resets the source.
func (a *NodeAffinityIterator) Reset() { a.source.Reset() }
