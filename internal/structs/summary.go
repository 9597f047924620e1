package structs

// JobSummary counts a job's allocations by client status per task group.
type JobSummary struct {
	JobID       string
	Namespace   string
	Summary     map[string]TaskGroupSummary
	Children    *JobChildrenSummary
	CreateIndex uint64
	ModifyIndex uint64
}

// TaskGroupSummary is one group's counts.
type TaskGroupSummary struct {
	Queued   int
	Complete int
	Failed   int
	Running  int
	Starting int
	Lost     int
	Unknown  int
}

// JobChildrenSummary counts children of periodic/parameterized parents.
type JobChildrenSummary struct {
	Pending int64
	Running int64
	Dead    int64
}

// Copy returns a deep copy.
func (s *JobSummary) Copy() *JobSummary {
	if s == nil {
		return nil
	}
	c := *s
	c.Summary = make(map[string]TaskGroupSummary, len(s.Summary))
	for k, v := range s.Summary {
		c.Summary[k] = v
	}
	if s.Children != nil {
		ch := *s.Children
		c.Children = &ch
	}
	return &c
}
