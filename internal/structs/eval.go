package structs

import "time"

// Evaluation is the unit of scheduling work: "look at this job again".
type Evaluation struct {
	ID                   string
	Namespace            string
	Priority             int
	Type                 string
	TriggeredBy          string
	JobID                string
	JobModifyIndex       uint64
	NodeID               string
	NodeModifyIndex      uint64
	DeploymentID         string
	Status               string
	StatusDescription    string
	Wait                 time.Duration
	WaitUntil            time.Time
	NextEval             string
	PreviousEval         string
	BlockedEval          string
	FailedTGAllocs       map[string]*AllocMetric
	ClassEligibility     map[string]bool
	EscapedComputedClass bool
	QuotaLimitReached    string
	AnnotatePlan         bool
	QueuedAllocations    map[string]int
	RelatedEvals         []*EvaluationStub `json:",omitempty"`
	LeaderACL            string            `json:"-" bexpr:"-"`
	SnapshotIndex        uint64
	CreateIndex          uint64
	ModifyIndex          uint64
	CreateTime           int64
	ModifyTime           int64
}

// TerminalStatus reports whether the eval is finished.
func (e *Evaluation) TerminalStatus() bool {
	switch e.Status {
	case EvalStatusComplete, EvalStatusFailed, EvalStatusCancelled:
		return true
	}
	return false
}

// ShouldEnqueue reports whether the broker should take the eval.
func (e *Evaluation) ShouldEnqueue() bool { return e.Status == EvalStatusPending }

// ShouldBlock reports whether blocked evals should track the eval.
func (e *Evaluation) ShouldBlock() bool { return e.Status == EvalStatusBlocked }

// Copy returns a shallow-safe copy (maps are copied).
func (e *Evaluation) Copy() *Evaluation {
	if e == nil {
		return nil
	}
	c := *e
	if e.FailedTGAllocs != nil {
		c.FailedTGAllocs = make(map[string]*AllocMetric, len(e.FailedTGAllocs))
		for k, v := range e.FailedTGAllocs {
			c.FailedTGAllocs[k] = v
		}
	}
	if e.ClassEligibility != nil {
		c.ClassEligibility = make(map[string]bool, len(e.ClassEligibility))
		for k, v := range e.ClassEligibility {
			c.ClassEligibility[k] = v
		}
	}
	if e.QueuedAllocations != nil {
		c.QueuedAllocations = make(map[string]int, len(e.QueuedAllocations))
		for k, v := range e.QueuedAllocations {
			c.QueuedAllocations[k] = v
		}
	}
	return &c
}

// MakePlan starts an empty plan for this eval.
func (e *Evaluation) MakePlan(j *Job) *Plan {
	p := &Plan{
		EvalID:         e.ID,
		Priority:       e.Priority,
		Job:            j,
		NodeUpdate:     make(map[string][]*Allocation),
		NodeAllocation: make(map[string][]*Allocation),
	}
	if j != nil {
		p.AllAtOnce = j.AllAtOnce
	}
	return p
}
