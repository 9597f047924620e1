package structs

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// JobRestartRequestType carries JobRestartRequest: a rolling restart's
// record together with what it asks of allocations in the same step (an
// in-place restart request, or a migrate transition the scheduler carries
// out) and the evaluations that go with it.
const JobRestartRequestType MessageType = 111

// Rolling restart statuses.
const (
	JobRestartStatusRunning  = "running"
	JobRestartStatusPaused   = "paused" // waiting for the operator (on_error or batch wait "ask")
	JobRestartStatusComplete = "complete"
	JobRestartStatusFailed   = "failed"
	JobRestartStatusCanceled = "canceled"
)

// Per-allocation progress of a rolling restart.
const (
	JobRestartAllocPending    = "pending"
	JobRestartAllocRestarting = "restarting"
	JobRestartAllocDone       = "done"
	JobRestartAllocFailed     = "failed"
	// JobRestartAllocSkipped: the allocation stopped before its turn.
	JobRestartAllocSkipped = "skipped"
)

// Job restart on_error values.
const (
	JobRestartOnErrorFail = "fail"
	JobRestartOnErrorAsk  = "ask"
)

// EvalTriggerJobRestart is the trigger of evaluations that replace
// allocations a rolling restart with Reschedule stopped.
const EvalTriggerJobRestart = "job-restart"

// TaskRestartSignaled is the task event of an in-place restart the
// operator asked for (Nomad's "Restart Signaled").
const TaskRestartSignaled = "Restart Signaled"

// TaskEventDetailRestartIndex names, in a Restart Signaled event's
// Details, the AllocRestartRequest.Index that caused it.
const TaskEventDetailRestartIndex = "restart_index"

// AllocRestartRequest asks the client to restart tasks of a running
// allocation in place, once per Index: the client restarts the named tasks
// (all running ones when Tasks is empty) when it sees an Index it has not
// handled yet.
type AllocRestartRequest struct {
	Index  uint64
	Tasks  []string
	Reason string
}

// JobRestartSpec is what an operator asks for (PUT /v1/job/<id>/restart).
type JobRestartSpec struct {
	// BatchSize allocations restart at a time (default 1); or
	// BatchSizePercent of the allocations to restart, rounded up.
	BatchSize        int
	BatchSizePercent int
	// BatchWait is the pause after a batch is running again; with
	// BatchWaitAsk the restart pauses after each batch until resumed.
	BatchWait    time.Duration
	BatchWaitAsk bool
	// Group limits the restart to one task group; Task to one task (in
	// every group that has it).
	Group string
	Task  string
	// AllTasks would also re-run completed lifecycle tasks: not supported.
	AllTasks bool
	// Reschedule replaces allocations through the scheduler instead of
	// restarting their tasks in place.
	Reschedule bool
	// OnError is "fail" (default: the restart fails) or "ask" (it pauses
	// until resumed or canceled) when an allocation does not come back.
	OnError string
}

// Validate checks a spec, naming the bad field.
func (s *JobRestartSpec) Validate() error {
	switch {
	case s.BatchSize < 0:
		return fmt.Errorf("BatchSize must not be negative, got %d", s.BatchSize)
	case s.BatchSizePercent < 0 || s.BatchSizePercent > 100:
		return fmt.Errorf("BatchSizePercent must be within 1-100, got %d", s.BatchSizePercent)
	case s.BatchSize > 0 && s.BatchSizePercent > 0:
		return fmt.Errorf("BatchSize and BatchSizePercent are exclusive")
	case s.BatchWait < 0:
		return fmt.Errorf("BatchWait must not be negative, got %s", s.BatchWait)
	case s.AllTasks && s.Task != "":
		return fmt.Errorf("AllTasks and Task are exclusive")
	case s.AllTasks:
		return fmt.Errorf("AllTasks is not supported: running tasks (sidecars included) are restarted by default; completed lifecycle tasks are not re-run")
	case s.Reschedule && s.Task != "":
		return fmt.Errorf("Reschedule replaces whole allocations and cannot be combined with Task")
	case s.OnError != "" && s.OnError != JobRestartOnErrorFail && s.OnError != JobRestartOnErrorAsk:
		return fmt.Errorf("OnError must be %q or %q, got %q", JobRestartOnErrorAsk, JobRestartOnErrorFail, s.OnError)
	}
	return nil
}

// JobRestart is a rolling restart of a job's allocations and its
// progress, kept in state so a new leader carries it on.
type JobRestart struct {
	ID        string
	Namespace string
	JobID     string
	JobSpec   JobRestartSpec

	// BatchSize is the effective batch size (from the spec's count or
	// percentage).
	BatchSize int
	Status    string
	// StatusDescription says why the restart is paused, failed or done.
	StatusDescription string
	// Allocs are the allocations to restart, in restart order.
	Allocs []*JobRestartAlloc
	// Batch counts the batches started so far.
	Batch int
	// WaitUntil (unix ns) is when the next batch may start: the end of
	// the batch wait after the previous batch came back.
	WaitUntil int64

	CreateTime  int64
	ModifyTime  int64
	CreateIndex uint64
	ModifyIndex uint64
}

// JobRestartAlloc is one allocation's progress.
type JobRestartAlloc struct {
	AllocID   string
	Name      string
	TaskGroup string
	// Tasks are the tasks restarted in place (empty with Reschedule).
	Tasks  []string
	Status string
	// Batch is the 1-based batch the allocation was restarted in.
	Batch int
	// RequestIndex is the AllocRestartRequest.Index written on the
	// allocation (in place; 0 with Reschedule).
	RequestIndex uint64
	// ReplacementID is the allocation that replaced it (Reschedule).
	ReplacementID string
	Error         string
	StartTime     int64
	EndTime       int64
}

// Active reports whether the restart still has work or waits for the
// operator.
func (r *JobRestart) Active() bool {
	return r != nil && (r.Status == JobRestartStatusRunning || r.Status == JobRestartStatusPaused)
}

// Copy returns a deep copy.
func (r *JobRestart) Copy() *JobRestart {
	if r == nil {
		return nil
	}
	c := *r
	c.Allocs = make([]*JobRestartAlloc, len(r.Allocs))
	for i, a := range r.Allocs {
		ac := *a
		ac.Tasks = append([]string(nil), a.Tasks...)
		c.Allocs[i] = &ac
	}
	return &c
}

// Counts returns how many allocations are in each status.
func (r *JobRestart) Counts() map[string]int {
	m := map[string]int{}
	for _, a := range r.Allocs {
		m[a.Status]++
	}
	return m
}

// JobRestartAllocUpdate is what a restart step writes on one allocation:
// an in-place restart request, or (Replace) a migrate transition that the
// scheduler carries out by stopping it and placing its replacement in one
// plan.
type JobRestartAllocUpdate struct {
	AllocID string
	Restart *AllocRestartRequest
	Replace bool
}

// JobRestartRequest is the Raft entry of a restart step: the restart's new
// record, the allocation writes and evaluations of this step.
type JobRestartRequest struct {
	Restart     *JobRestart
	AllocWrites []*JobRestartAllocUpdate
	Evals       []*Evaluation
	WriteRequest
}

// JobRestartStartRequest starts a rolling restart (Job.Restart RPC).
type JobRestartStartRequest struct {
	JobID string
	Spec  JobRestartSpec
	WriteRequest
}

// JobRestartControlRequest resumes or cancels the job's restart.
type JobRestartControlRequest struct {
	JobID  string
	Resume bool // false: cancel
	WriteRequest
}

// JobRestartSpecificRequest reads the job's latest restart.
type JobRestartSpecificRequest struct {
	JobID string
	QueryOptions
}

// JobRestartResponse carries a restart (nil when the job never had one).
type JobRestartResponse struct {
	Restart *JobRestart
	QueryMeta
}

// ParseBatchSize reads a batch size: "N" (a count, at least 1) or "N%"
// (a percentage within 1-100).
func ParseBatchSize(v string) (count, percent int, err error) {
	bad := fmt.Errorf("%q is not a count of at least 1 or a percentage within 1%%-100%%", v)
	if p, ok := strings.CutSuffix(v, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 100 {
			return 0, 0, bad
		}
		return 0, n, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, 0, bad
	}
	return n, 0, nil
}
