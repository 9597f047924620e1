package structs

// Plan is what a scheduler proposes for one evaluation.
type Plan struct {
	EvalID            string
	EvalToken         string
	Priority          int
	AllAtOnce         bool
	Job               *Job
	NodeUpdate        map[string][]*Allocation // stops and evictions, by node
	NodeAllocation    map[string][]*Allocation // placements and updates, by node
	NodePreemptions   map[string][]*Allocation
	Annotations       *PlanAnnotations
	Deployment        *Deployment
	DeploymentUpdates []*DeploymentStatusUpdate
	SnapshotIndex     uint64
}

// DeploymentStatusUpdate changes a deployment's status.
type DeploymentStatusUpdate struct {
	DeploymentID      string
	Status            string
	StatusDescription string
}

// AppendStoppedAlloc records that alloc must stop.
func (p *Plan) AppendStoppedAlloc(alloc *Allocation, desiredDesc, clientStatus, followupEvalID string) {
	a := alloc.CopySkipJob()
	a.DesiredStatus = AllocDesiredStatusStop
	a.DesiredDescription = desiredDesc
	if clientStatus != "" {
		a.ClientStatus = clientStatus
	}
	if followupEvalID != "" {
		a.FollowupEvalID = followupEvalID
	}
	p.NodeUpdate[a.NodeID] = append(p.NodeUpdate[a.NodeID], a)
}

// AppendPreemptedAlloc records that alloc is evicted to make room for the
// allocation preemptingID.
func (p *Plan) AppendPreemptedAlloc(alloc *Allocation, preemptingID string) {
	a := alloc.CopySkipJob()
	a.DesiredStatus = AllocDesiredStatusEvict
	a.DesiredDescription = "Preempted by alloc ID " + preemptingID
	a.PreemptedByAllocation = preemptingID
	if p.NodePreemptions == nil {
		p.NodePreemptions = make(map[string][]*Allocation)
	}
	p.NodePreemptions[a.NodeID] = append(p.NodePreemptions[a.NodeID], a)
}

// AppendAlloc records a placement or an in-place update.
func (p *Plan) AppendAlloc(alloc *Allocation) {
	p.NodeAllocation[alloc.NodeID] = append(p.NodeAllocation[alloc.NodeID], alloc)
}

// PopUpdate removes the last stop recorded for alloc, if any.
func (p *Plan) PopUpdate(alloc *Allocation) {
	list := p.NodeUpdate[alloc.NodeID]
	n := len(list)
	if n > 0 && list[n-1].ID == alloc.ID {
		list = list[:n-1]
		if len(list) == 0 {
			delete(p.NodeUpdate, alloc.NodeID)
		} else {
			p.NodeUpdate[alloc.NodeID] = list
		}
	}
}

// IsNoOp reports whether the plan changes nothing.
func (p *Plan) IsNoOp() bool {
	return len(p.NodeUpdate) == 0 && len(p.NodeAllocation) == 0 &&
		len(p.NodePreemptions) == 0 && p.Deployment == nil && len(p.DeploymentUpdates) == 0
}

// PlanResult is what the plan applier committed.
type PlanResult struct {
	NodeUpdate        map[string][]*Allocation
	NodeAllocation    map[string][]*Allocation
	NodePreemptions   map[string][]*Allocation
	Deployment        *Deployment
	DeploymentUpdates []*DeploymentStatusUpdate
	RejectedNodes     []string
	RefreshIndex      uint64
	AllocIndex        uint64
}

// FullCommit reports whether everything the plan asked for was committed,
// with the counts of expected and actual placements.
func (r *PlanResult) FullCommit(p *Plan) (bool, int, int) {
	expected, actual := 0, 0
	for node, allocs := range p.NodeAllocation {
		expected += len(allocs)
		actual += len(r.NodeAllocation[node])
	}
	return expected == actual, expected, actual
}
