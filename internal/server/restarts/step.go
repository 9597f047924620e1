// Package restarts owns the rolling restart's state machine: given a
// restart's record, its job and the job's allocations, Step decides the next
// move (check the batch in flight, wait, start the next batch, finish, fail
// or pause). It is a pure function: no state reads, no clock, no Raft; the
// leader's runner (internal/server/job_restart.go) feeds it and writes what
// it returns in one Raft entry.
package restarts

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// DefaultDeadline bounds how long an allocation may take to come back when
// its group sets no healthy_deadline.
const DefaultDeadline = 5 * time.Minute

// Input is what Step looks at.
type Input struct {
	Restart *structs.JobRestart
	// Job is the job's current version; nil when it was purged.
	Job *structs.Job
	// Allocs are all the job's allocations.
	Allocs []*structs.Allocation
	Now    time.Time
}

// Output is the step to write. Restart is nil when nothing changed.
type Output struct {
	Restart *structs.JobRestart
	Writes  []*structs.JobRestartAllocUpdate
	// Eval asks for an evaluation of the job (allocations were marked for
	// the scheduler to replace).
	Eval bool
	// WakeAt is when Step wants to look again at the latest, even if
	// nothing changes in state (batch wait, min_healthy_time); zero: only
	// on a change.
	WakeAt time.Time
}

// Plan builds a new restart of job: the allocations to restart, in name
// order, and the effective batch size. It returns a 400-worthy error when
// nothing matches.
func Plan(id string, job *structs.Job, allocs []*structs.Allocation, spec structs.JobRestartSpec, now time.Time) (*structs.JobRestart, error) {
	if spec.Group != "" && job.LookupTaskGroup(spec.Group) == nil {
		return nil, fmt.Errorf("Group: job %q has no group %q", job.ID, spec.Group)
	}
	if spec.Task != "" {
		found := false
		for _, tg := range job.TaskGroups {
			if (spec.Group == "" || tg.Name == spec.Group) && tg.LookupTask(spec.Task) != nil {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("Task: no group of job %q has a task %q", job.ID, spec.Task)
		}
	}
	r := &structs.JobRestart{ID: id, Namespace: job.Namespace, JobID: job.ID, JobSpec: spec,
		Status: structs.JobRestartStatusRunning, CreateTime: now.UnixNano(), ModifyTime: now.UnixNano()}
	if r.JobSpec.OnError == "" {
		r.JobSpec.OnError = structs.JobRestartOnErrorFail
	}
	for _, a := range allocs {
		if a.TerminalStatus() || a.ClientStatus != structs.AllocClientStatusRunning {
			continue
		}
		if spec.Group != "" && a.TaskGroup != spec.Group {
			continue
		}
		ra := &structs.JobRestartAlloc{AllocID: a.ID, Name: a.Name, TaskGroup: a.TaskGroup, Status: structs.JobRestartAllocPending}
		if !spec.Reschedule {
			ra.Tasks = runningTasks(a, spec.Task)
			if len(ra.Tasks) == 0 {
				continue // the task is not in this group or not running
			}
		}
		r.Allocs = append(r.Allocs, ra)
	}
	if len(r.Allocs) == 0 {
		return nil, fmt.Errorf("job %q has no running allocations to restart", job.ID)
	}
	sort.Slice(r.Allocs, func(i, j int) bool {
		if r.Allocs[i].Name != r.Allocs[j].Name {
			return r.Allocs[i].Name < r.Allocs[j].Name
		}
		return r.Allocs[i].AllocID < r.Allocs[j].AllocID
	})
	switch {
	case spec.BatchSizePercent > 0:
		r.BatchSize = int(math.Ceil(float64(len(r.Allocs)) * float64(spec.BatchSizePercent) / 100))
	case spec.BatchSize > 0:
		r.BatchSize = spec.BatchSize
	default:
		r.BatchSize = 1
	}
	r.BatchSize = max(1, min(r.BatchSize, len(r.Allocs)))
	return r, nil
}

// runningTasks lists the alloc's running tasks (only task, if set), sorted.
func runningTasks(a *structs.Allocation, task string) []string {
	var out []string
	for name, ts := range a.TaskStates {
		if ts == nil || ts.State != structs.TaskStateRunning || (task != "" && name != task) {
			continue
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Step decides the restart's next move.
func Step(in Input) Output {
	r := in.Restart
	if r == nil || r.Status != structs.JobRestartStatusRunning {
		return Output{}
	}
	r = r.Copy()
	now := in.Now
	r.ModifyTime = now.UnixNano()
	if in.Job == nil || in.Job.Stop {
		finish(r, structs.JobRestartStatusFailed, "job was stopped or purged during the restart", now)
		return Output{Restart: r}
	}
	byID := make(map[string]*structs.Allocation, len(in.Allocs))
	for _, a := range in.Allocs {
		byID[a.ID] = a
	}

	// 1. The batch in flight.
	changed := false
	var wake time.Time
	var failures []string
	inFlight := 0
	for _, ra := range r.Allocs {
		if ra.Status != structs.JobRestartAllocRestarting {
			continue
		}
		var done bool
		var errMsg string
		var at time.Time
		if r.JobSpec.Reschedule {
			done, errMsg = checkReplaced(ra, byID[ra.AllocID], in.Allocs)
		} else {
			done, errMsg, at = checkInPlace(ra, byID[ra.AllocID], in.Job, now)
		}
		if errMsg == "" && !done && deadlinePassed(ra, in.Job, now) {
			errMsg = fmt.Sprintf("did not come back within %s", deadline(in.Job, ra.TaskGroup))
		}
		switch {
		case errMsg != "":
			ra.Status, ra.Error, ra.EndTime = structs.JobRestartAllocFailed, errMsg, now.UnixNano()
			failures = append(failures, fmt.Sprintf("allocation %s (%s): %s", shortID(ra.AllocID), ra.Name, errMsg))
			changed = true
		case done:
			ra.Status, ra.EndTime = structs.JobRestartAllocDone, now.UnixNano()
			changed = true
		default:
			inFlight++
			if !at.IsZero() && (wake.IsZero() || at.Before(wake)) {
				wake = at
			}
			dl := time.Unix(0, ra.StartTime).Add(deadline(in.Job, ra.TaskGroup))
			if wake.IsZero() || dl.Before(wake) {
				wake = dl
			}
		}
	}
	if len(failures) > 0 {
		desc := "failed to restart " + failures[0]
		if len(failures) > 1 {
			desc += fmt.Sprintf(" (and %d more)", len(failures)-1)
		}
		if r.JobSpec.OnError == structs.JobRestartOnErrorAsk {
			r.Status = structs.JobRestartStatusPaused
			r.StatusDescription = desc + "; resume to continue or cancel"
		} else {
			finish(r, structs.JobRestartStatusFailed, desc, now)
		}
		return Output{Restart: r}
	}
	if inFlight > 0 {
		return Output{Restart: changedOrNil(r, changed), WakeAt: wake}
	}

	// 2. Between batches: the wait after the batch that came back.
	pending := 0
	for _, ra := range r.Allocs {
		if ra.Status == structs.JobRestartAllocPending {
			pending++
		}
	}
	if pending == 0 {
		finish(r, structs.JobRestartStatusComplete, fmt.Sprintf("restarted %d allocations in %d batches", len(r.Allocs)-r.Counts()[structs.JobRestartAllocSkipped], r.Batch), now)
		return Output{Restart: r}
	}
	if r.Batch > 0 && r.WaitUntil == 0 {
		if r.JobSpec.BatchWaitAsk {
			r.WaitUntil = now.UnixNano()
			r.Status = structs.JobRestartStatusPaused
			r.StatusDescription = fmt.Sprintf("batch %d restarted; resume to restart the next batch", r.Batch)
			return Output{Restart: r}
		}
		if r.JobSpec.BatchWait > 0 {
			r.WaitUntil = now.Add(r.JobSpec.BatchWait).UnixNano()
			r.StatusDescription = fmt.Sprintf("batch %d restarted; waiting %s before the next", r.Batch, r.JobSpec.BatchWait)
			return Output{Restart: r, WakeAt: time.Unix(0, r.WaitUntil)}
		}
	}
	if r.WaitUntil > now.UnixNano() {
		return Output{Restart: changedOrNil(r, changed), WakeAt: time.Unix(0, r.WaitUntil)}
	}

	// 3. The next batch.
	out := Output{Restart: r}
	r.Batch++
	r.WaitUntil = 0
	started := 0
	for _, ra := range r.Allocs {
		if started == r.BatchSize {
			break
		}
		if ra.Status != structs.JobRestartAllocPending {
			continue
		}
		a := byID[ra.AllocID]
		if a == nil || a.TerminalStatus() {
			ra.Status, ra.Error, ra.EndTime = structs.JobRestartAllocSkipped, "allocation is no longer running", now.UnixNano()
			continue
		}
		ra.Status, ra.Batch, ra.StartTime = structs.JobRestartAllocRestarting, r.Batch, now.UnixNano()
		if r.JobSpec.Reschedule {
			out.Writes = append(out.Writes, &structs.JobRestartAllocUpdate{AllocID: a.ID, Replace: true})
			out.Eval = true
		} else {
			idx := uint64(1)
			if a.RestartRequest != nil {
				idx = a.RestartRequest.Index + 1
			}
			ra.RequestIndex = idx
			out.Writes = append(out.Writes, &structs.JobRestartAllocUpdate{AllocID: a.ID, Restart: &structs.AllocRestartRequest{
				Index: idx, Tasks: append([]string(nil), ra.Tasks...), Reason: "rolling restart " + shortID(r.ID)}})
		}
		started++
	}
	r.StatusDescription = fmt.Sprintf("restarting batch %d", r.Batch)
	if started == 0 {
		// Everything left was gone: finish on the next look.
		r.Batch--
		r.StatusDescription = ""
	}
	return out
}

func changedOrNil(r *structs.JobRestart, changed bool) *structs.JobRestart {
	if changed {
		return r
	}
	return nil
}

func finish(r *structs.JobRestart, status, desc string, now time.Time) {
	r.Status, r.StatusDescription = status, desc
	r.ModifyTime = now.UnixNano()
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// deadline is how long an allocation may take to be running (and healthy)
// again: the group's healthy_deadline, else DefaultDeadline.
func deadline(job *structs.Job, group string) time.Duration {
	if tg := job.LookupTaskGroup(group); tg != nil && tg.Update != nil && tg.Update.HealthyDeadline != nil && *tg.Update.HealthyDeadline > 0 {
		return *tg.Update.HealthyDeadline
	}
	return DefaultDeadline
}

func deadlinePassed(ra *structs.JobRestartAlloc, job *structs.Job, now time.Time) bool {
	return now.Sub(time.Unix(0, ra.StartTime)) > deadline(job, ra.TaskGroup)
}

// minHealthy is how long restarted tasks must run before their allocation
// counts as back: the group's min_healthy_time when it has an update block
// whose health is not set by hand.
func minHealthy(job *structs.Job, group string) time.Duration {
	tg := job.LookupTaskGroup(group)
	if tg == nil || tg.Update == nil || tg.Update.MinHealthyTime == nil {
		return 0
	}
	if tg.Update.HealthCheck != nil && *tg.Update.HealthCheck == "manual" {
		return 0
	}
	return *tg.Update.MinHealthyTime
}

// checkInPlace: every task asked to restart has a Restart Signaled event
// for this request and runs again (for min_healthy_time, if the group has
// an update block). at is when it will be healthy, if only time is missing.
func checkInPlace(ra *structs.JobRestartAlloc, a *structs.Allocation, job *structs.Job, now time.Time) (done bool, errMsg string, at time.Time) {
	switch {
	case a == nil:
		return false, "allocation was removed", time.Time{}
	case a.ServerTerminalStatus():
		return false, "allocation was stopped", time.Time{}
	case a.ClientTerminalStatus():
		return false, "allocation is " + a.ClientStatus, time.Time{}
	}
	var ready time.Time
	for _, task := range ra.Tasks {
		ts := a.TaskStates[task]
		if ts == nil {
			return false, "", time.Time{}
		}
		signaled := false
		var signaledAt int64
		for _, ev := range ts.Events {
			if ev != nil && ev.Type == structs.TaskRestartSignaled && ev.Details[structs.TaskEventDetailRestartIndex] == fmt.Sprint(ra.RequestIndex) {
				signaled, signaledAt = true, ev.Time
			}
		}
		if !signaled {
			return false, "", time.Time{}
		}
		if ts.State == structs.TaskStateDead {
			return false, fmt.Sprintf("task %q did not restart", task), time.Time{}
		}
		if ts.State != structs.TaskStateRunning || ts.StartedAt.UnixNano() < signaledAt {
			return false, "", time.Time{}
		}
		if ts.StartedAt.After(ready) {
			ready = ts.StartedAt
		}
	}
	healthyAt := ready.Add(minHealthy(job, ra.TaskGroup))
	if now.Before(healthyAt) {
		return false, "", healthyAt
	}
	return true, "", time.Time{}
}

// checkReplaced: the allocation's replacement (its NextAllocation, else
// one with the same name created after it) runs, and is healthy when its
// deployment tracks health.
func checkReplaced(ra *structs.JobRestartAlloc, old *structs.Allocation, allocs []*structs.Allocation) (done bool, errMsg string) {
	var repl *structs.Allocation
	if old != nil && old.NextAllocation != "" {
		for _, a := range allocs {
			if a.ID == old.NextAllocation {
				repl = a
			}
		}
	}
	for _, a := range allocs {
		if old != nil && old.NextAllocation != "" {
			break // linked: only that one counts
		}
		if a.ID == ra.AllocID || a.Name != ra.Name || a.TaskGroup != ra.TaskGroup || a.ServerTerminalStatus() {
			continue
		}
		if old != nil && a.CreateIndex <= old.CreateIndex {
			continue
		}
		if repl == nil || a.CreateIndex > repl.CreateIndex {
			repl = a
		}
	}
	if repl == nil {
		return false, ""
	}
	ra.ReplacementID = repl.ID
	switch {
	case repl.ClientStatus == structs.AllocClientStatusFailed || repl.ClientStatus == structs.AllocClientStatusLost:
		return false, "replacement " + shortID(repl.ID) + " is " + repl.ClientStatus
	case repl.DeploymentStatus != nil && repl.DeploymentStatus.Healthy != nil && !*repl.DeploymentStatus.Healthy:
		return false, "replacement " + shortID(repl.ID) + " is unhealthy"
	case repl.ClientStatus != structs.AllocClientStatusRunning:
		return false, ""
	case repl.DeploymentStatus != nil && repl.DeploymentStatus.Healthy == nil && repl.DeploymentID != "":
		return false, "" // its deployment has not judged it yet
	}
	return true, ""
}
