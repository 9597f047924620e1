package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/structs"
)

// JobSummaryByID returns a job's allocation counts per task group, or nil.
func (s *reader) JobSummaryByID(ws memdb.WatchSet, namespace, id string) (*structs.JobSummary, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	raw, err := first(txn, ws, tableJobSummary, "id", namespace, id)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*structs.JobSummary), nil
}

// JobSummaries iterates every job summary (used by FSM snapshots).
func (s *reader) JobSummaries(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	return get(txn, ws, tableJobSummary, "id")
}

func summaryFor(txn *memdb.Txn, namespace, jobID string) (*structs.JobSummary, error) {
	raw, err := txn.First(tableJobSummary, "id", namespace, jobID)
	if err != nil {
		return nil, fmt.Errorf("state: job summary lookup: %w", err)
	}
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.JobSummary), nil
}

func putSummary(txn *memdb.Txn, index uint64, sum *structs.JobSummary) error {
	sum.ModifyIndex = index
	if err := txn.Insert(tableJobSummary, sum); err != nil {
		return fmt.Errorf("state: job summary insert: %w", err)
	}
	return bumpIndex(txn, index, tableJobSummary)
}

// ensureJobSummary creates the summary of a new job, or aligns the groups
// of an existing one with the job's task groups.
func ensureJobSummary(txn *memdb.Txn, index uint64, job *structs.Job) error {
	ex, err := summaryFor(txn, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	parent := job.IsPeriodic() || job.IsParameterized()
	if ex == nil {
		sum := &structs.JobSummary{
			JobID:       job.ID,
			Namespace:   job.Namespace,
			Summary:     make(map[string]structs.TaskGroupSummary, len(job.TaskGroups)),
			CreateIndex: index,
		}
		for _, tg := range job.TaskGroups {
			sum.Summary[tg.Name] = structs.TaskGroupSummary{}
		}
		if parent {
			sum.Children = &structs.JobChildrenSummary{}
		}
		return putSummary(txn, index, sum)
	}
	changed := false
	sum := ex.Copy()
	for _, tg := range job.TaskGroups {
		if _, ok := sum.Summary[tg.Name]; !ok {
			sum.Summary[tg.Name] = structs.TaskGroupSummary{}
			changed = true
		}
	}
	for name := range sum.Summary {
		if job.LookupTaskGroup(name) == nil {
			delete(sum.Summary, name)
			changed = true
		}
	}
	if parent && sum.Children == nil {
		sum.Children = &structs.JobChildrenSummary{}
		changed = true
	}
	if !changed {
		return nil
	}
	return putSummary(txn, index, sum)
}

// updateParentChildren moves a child job between its parent's children
// counts when its status changes ("" = not counted: new or purged).
func updateParentChildren(txn *memdb.Txn, index uint64, child *structs.Job, from, to string) error {
	if child.ParentID == "" || from == to {
		return nil
	}
	ex, err := summaryFor(txn, child.Namespace, child.ParentID)
	if err != nil || ex == nil {
		return err
	}
	sum := ex.Copy()
	if sum.Children == nil {
		sum.Children = &structs.JobChildrenSummary{}
	}
	adjust := func(status string, d int64) {
		var p *int64
		switch status {
		case structs.JobStatusPending:
			p = &sum.Children.Pending
		case structs.JobStatusRunning:
			p = &sum.Children.Running
		case structs.JobStatusDead:
			p = &sum.Children.Dead
		default:
			return
		}
		if *p+d >= 0 {
			*p += d
		}
	}
	adjust(from, -1)
	adjust(to, +1)
	return putSummary(txn, index, sum)
}

// countOf returns the summary counter for a client status.
func countOf(tg *structs.TaskGroupSummary, clientStatus string) *int {
	switch clientStatus {
	case structs.AllocClientStatusPending, "":
		return &tg.Starting
	case structs.AllocClientStatusRunning:
		return &tg.Running
	case structs.AllocClientStatusComplete:
		return &tg.Complete
	case structs.AllocClientStatusFailed:
		return &tg.Failed
	case structs.AllocClientStatusLost:
		return &tg.Lost
	case structs.AllocClientStatusUnknown:
		return &tg.Unknown
	}
	return nil
}

// summaryQueuedFromEval records the queued counts a finished (complete or
// blocked) evaluation reports for its job.
func summaryQueuedFromEval(txn *memdb.Txn, index uint64, e *structs.Evaluation) error {
	if len(e.QueuedAllocations) == 0 ||
		(e.Status != structs.EvalStatusComplete && e.Status != structs.EvalStatusBlocked) {
		return nil
	}
	ex, err := summaryFor(txn, e.Namespace, e.JobID)
	if err != nil || ex == nil {
		return err
	}
	sum := ex.Copy()
	changed := false
	for name, n := range e.QueuedAllocations {
		tg, ok := sum.Summary[name]
		if !ok || tg.Queued == n {
			continue
		}
		tg.Queued = n
		sum.Summary[name] = tg
		changed = true
	}
	if !changed {
		return nil
	}
	return putSummary(txn, index, sum)
}
