package feasible

// maxJobPriority is the highest job priority; it scales the preemption
// penalty into [-1, 0].
const maxJobPriority = 100

// PreemptionScoringIterator penalises options that evict allocations, the
// more the higher and the more numerous the victims: the net priority
// max + sum/max of the victims' job priorities, divided by 100 and capped
// at 1, is subtracted. Options without victims are not scored.
type PreemptionScoringIterator struct {
	source RankIterator
}

// Next scores the next option.
func (p *PreemptionScoringIterator) Next() *RankedNode {
	opt := p.source.Next()
	if opt == nil || len(opt.Preempted) == 0 {
		return opt
	}
	opt.addScore("preemption", -preemptionPenalty(opt))
	return opt
}

func preemptionPenalty(opt *RankedNode) float64 {
	maxP, sum := 0, 0
	for _, a := range opt.Preempted {
		pr := 0
		if a.Job != nil {
			pr = a.Job.Priority
		}
		maxP = max(maxP, pr)
		sum += pr
	}
	if maxP == 0 {
		return 0
	}
	net := float64(maxP) + float64(sum)/float64(maxP)
	return min(1, net/maxJobPriority)
}

// Reset resets the source.
func (p *PreemptionScoringIterator) Reset() { p.source.Reset() }
