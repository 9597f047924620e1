package feasible

import (
	"math"

	"github.com/drover-project/drover/internal/structs"
)

// implicitTarget is the spread target that stands for every value not
// named, holding the percentage the named targets leave over.
const implicitTarget = "*"

// SpreadIterator scores nodes so that a group's allocations spread over
// the values of node properties (job- and group-level spread blocks).
//
// Each spread contributes boost × weight/sum(|weights|), where boost is in
// [-1, 1]:
//   - with targets: (desired − used) / desired for the node's value, where
//     desired = percent × count and used counts the group's allocations
//     (existing and proposed) on nodes with that value plus the one being
//     placed, so a value at its target already scores below one that is
//     short of it; a value with no
//     target (and no percentage left for "*") or a 0 % target gets −1;
//   - without targets: nothing placed yet → 0; a value less used than the
//     least used one (new value) → 1; a value above the minimum →
//     (min − used)/used; the least used value → (max − min)/max, or −1
//     when all values are already even;
//   - a node without the property gets −1.
type SpreadIterator struct {
	ctx        *Context
	source     RankIterator
	job        *structs.Job
	tg         *structs.TaskGroup
	spreads    []*spreadState
	sumWeights float64
}

type spreadState struct {
	weight  float64
	set     *propertySet
	desired map[string]float64 // nil: even spread
	counts  map[string]int
	failed  bool
}

// SetJob sets the job.
func (s *SpreadIterator) SetJob(job *structs.Job) { s.job = job }

// SetTaskGroup collects the spreads of tg and counts current use (call it
// once per selection).
func (s *SpreadIterator) SetTaskGroup(tg *structs.TaskGroup) {
	s.tg = tg
	s.spreads = s.spreads[:0]
	s.sumWeights = 0
	var all []*structs.Spread
	if s.job != nil {
		all = append(all, s.job.Spreads...)
	}
	all = append(all, tg.Spreads...)
	for _, sp := range all {
		st := &spreadState{weight: weightOf(sp.Weight), set: newPropertySet(s.ctx, s.job, tg.Name, sp.Attribute)}
		if len(sp.SpreadTarget) > 0 {
			st.desired = make(map[string]float64, len(sp.SpreadTarget)+1)
			sum := 0.0
			for _, t := range sp.SpreadTarget {
				pct := float64(t.Percent)
				st.desired[t.Value] = pct / 100 * float64(tg.Count)
				sum += pct
			}
			if sum < 100 {
				if _, named := st.desired[implicitTarget]; !named {
					st.desired[implicitTarget] = (100 - sum) / 100 * float64(tg.Count)
				}
			}
		}
		counts, err := st.set.Counts()
		if err != nil {
			s.ctx.Logger.Error("failed to count spread use", "attribute", sp.Attribute, "error", err)
			st.failed = true
		}
		st.counts = counts
		s.spreads = append(s.spreads, st)
		s.sumWeights += math.Abs(st.weight)
	}
}

// Next scores the next option.
func (s *SpreadIterator) Next() *RankedNode {
	opt := s.source.Next()
	if opt == nil || len(s.spreads) == 0 || s.sumWeights == 0 {
		return opt
	}
	total := 0.0
	for _, st := range s.spreads {
		total += st.boost(opt.Node) * st.weight / s.sumWeights
	}
	// Recorded even when 0: a value at its target must not look as good
	// as one that is short of it by averaging fewer scores.
	opt.addScore("allocation-spread", total)
	return opt
}

func (st *spreadState) boost(n *structs.Node) float64 {
	if st.failed {
		return 0
	}
	v, ok := st.set.value(n)
	if !ok {
		return -1
	}
	if st.desired != nil {
		return targetBoost(st.desired, st.counts, v)
	}
	return evenBoost(st.counts, v)
}

func targetBoost(desired map[string]float64, counts map[string]int, v string) float64 {
	want, ok := desired[v]
	if !ok {
		want, ok = desired[implicitTarget]
	}
	if !ok || want <= 0 {
		return -1
	}
	used := float64(counts[v] + 1) // this placement
	return clampUnit((want - used) / want)
}

func evenBoost(counts map[string]int, v string) float64 {
	if len(counts) == 0 {
		return 0
	}
	minC, maxC := math.MaxInt, 0
	for _, c := range counts {
		minC = min(minC, c)
		maxC = max(maxC, c)
	}
	used := counts[v]
	switch {
	case used < minC:
		return 1
	case used > minC:
		return clampUnit(float64(minC-used) / float64(used))
	case minC == maxC:
		return -1
	}
	return float64(maxC-minC) / float64(maxC)
}

func clampUnit(f float64) float64 { return math.Max(-1, math.Min(1, f)) }

// Reset resets the source.
func (s *SpreadIterator) Reset() { s.source.Reset() }
