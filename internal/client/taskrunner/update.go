package taskrunner

import "github.com/drover-project/drover/internal/structs"

// An in-place update hands the runner a newer copy of the allocation (Update)
// whose job differs only in what a running task can take without a restart
// (the servers decide: anything the task was started with is a destructive
// update, a new allocation). The runner then reads the fields it acts on
// later — restart policy, kill_timeout, kill_signal — from the newest copy,
// and keeps everything the task was started with from cfg.Task.

// newestGroup is the task's group in the newest copy of the job (nil if
// that copy has none).
func (tr *TaskRunner) newestGroup() *structs.TaskGroup {
	tr.mu.Lock()
	alloc := tr.alloc
	tr.mu.Unlock()
	if alloc == nil || alloc.Job == nil {
		return nil
	}
	return alloc.Job.LookupTaskGroup(alloc.TaskGroup)
}

// newestTask is the task's spec in the newest copy of the job, or the spec
// it started with when that copy lacks it.
func (tr *TaskRunner) newestTask() *structs.Task {
	if tg := tr.newestGroup(); tg != nil {
		if t := tg.LookupTask(tr.cfg.Task.Name); t != nil {
			return t
		}
	}
	return tr.cfg.Task
}
