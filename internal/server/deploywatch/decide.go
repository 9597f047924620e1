package deploywatch

import (
	"fmt"
	"sort"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Status descriptions of the deployments the watcher fails, worded as
// Nomad's (and as the Deployment endpoints word them): users and tools
// match on them.
const (
	DescFailedAllocs     = "Failed due to unhealthy allocations"
	DescProgressDeadline = "Failed due to progress deadline"
)

// descRollback, descNoRollbackTarget and descRollbackSameSpec extend a
// failure description with what happened to the job.
func descRollback(base string, version uint64) string {
	return fmt.Sprintf("%s - rolling back to job version %d", base, version)
}

func descNoRollbackTarget(base string) string {
	return base + " - no stable job version to auto revert to"
}

func descRollbackSameSpec(base string, version uint64) string {
	return fmt.Sprintf("%s - not rolling back to stable job version %d as current job has same specification", base, version)
}

// view is what one pass over a deployment reads from state.
type view struct {
	d      *structs.Deployment
	job    *structs.Job          // the job as stored now (may be nil)
	allocs []*structs.Allocation // the deployment's allocations
	// latestEval is the state index the job's newest evaluation saw (its
	// SnapshotIndex once a scheduler processed it, else its CreateIndex).
	latestEval uint64
	now        time.Time
}

// decision is what the watcher does after one pass. At most one of fail and
// promote is set.
type decision struct {
	fail     bool
	failDesc string
	rollback bool // a failed group auto-reverts

	allowReplacements []string // unhealthy allocs the scheduler may replace
	createEval        bool     // a healthy alloc is newer than the latest eval
	promote           bool

	// deadline is the earliest RequireProgressBy of the unfinished groups
	// (zero: none); the watcher wakes then.
	deadline time.Time
}

// decide is the watcher's whole policy for one deployment: a pure function
// of what state holds and the time.
func decide(v view) decision {
	var out decision
	d := v.d
	if d == nil || !d.Active() {
		return out
	}

	// Allocations first: an unhealthy one is replaced or fails the
	// deployment; a healthy one newer than the latest eval needs an eval.
	sorted := append([]*structs.Allocation(nil), v.allocs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	for _, a := range sorted {
		st := d.TaskGroups[a.TaskGroup]
		if st == nil || a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil {
			continue
		}
		if *a.DeploymentStatus.Healthy {
			if a.DeploymentStatus.ModifyIndex > v.latestEval {
				out.createEval = true
			}
			continue
		}
		if isSet(a.DesiredTransition.Reschedule) {
			continue // already handed to the scheduler
		}
		if st.ProgressDeadline == 0 || rescheduleExhausted(a, v.job, v.now) {
			out.fail = true
			out.failDesc = DescFailedAllocs
			out.rollback = out.rollback || st.AutoRevert
			continue
		}
		out.allowReplacements = append(out.allowReplacements, a.ID)
	}
	if out.fail {
		out.allowReplacements, out.createEval = nil, false
		return out
	}
	if out.createEval && !schedulerHasWork(d) {
		// Every group has placed what it will place and some are not yet
		// healthy: an eval now would change nothing. The one after the
		// last health change (every group done) completes the
		// deployment. Without this, a fleet whose health reports trickle
		// in over many batch windows got an eval per window and job (the
		// three-server benchmark, slower on two cores, made 2.6 times the
		// evaluations of one server).
		out.createEval = false
	}

	// The progress deadline. A paused deployment never fails by it.
	out.deadline = progressCutoff(d)
	if d.Status == structs.DeploymentStatusRunning && !out.deadline.IsZero() && !v.now.Before(out.deadline) {
		out.fail = true
		out.failDesc = DescProgressDeadline
		for _, name := range sortedGroups(d) {
			st := d.TaskGroups[name]
			if !groupDone(st) && st.AutoRevert {
				out.rollback = true
			}
		}
		out.allowReplacements, out.createEval, out.deadline = nil, false, time.Time{}
		return out
	}

	out.promote = shouldAutoPromote(d, v.allocs)
	return out
}

// schedulerHasWork reports whether an eval of the deployment's job could
// do something: some group still has placements to make (the next
// max_parallel batch) or unpromoted canaries, or every group has the
// healthy allocations it needs (the scheduler marks the deployment
// successful).
func schedulerHasWork(d *structs.Deployment) bool {
	done := true
	for _, st := range d.TaskGroups {
		if st == nil {
			continue
		}
		if st.DesiredCanaries > 0 && !st.Promoted {
			// Canaries keep an eval per health change, as Nomad's
			// watcher does: operators watch them one by one.
			return true
		}
		if st.PlacedAllocs < st.DesiredTotal {
			return true
		}
		done = done && groupDone(st)
	}
	return done
}

// groupDone reports whether a group has the healthy allocations it needs:
// its canaries while they are unpromoted, else its whole count.
func groupDone(st *structs.DeploymentState) bool {
	if st.DesiredCanaries > 0 && !st.Promoted {
		return st.HealthyAllocs >= st.DesiredCanaries
	}
	return st.HealthyAllocs >= st.DesiredTotal
}

// progressCutoff is the earliest RequireProgressBy of the groups not done.
func progressCutoff(d *structs.Deployment) time.Time {
	var next time.Time
	for _, st := range d.TaskGroups {
		if st == nil || st.RequireProgressBy.IsZero() || groupDone(st) {
			continue
		}
		if next.IsZero() || st.RequireProgressBy.Before(next) {
			next = st.RequireProgressBy
		}
	}
	return next
}

// shouldAutoPromote: some group has canaries, and every group with canaries
// auto-promotes, is unpromoted and has all its desired canaries placed and
// healthy. Only a running deployment promotes.
func shouldAutoPromote(d *structs.Deployment, allocs []*structs.Allocation) bool {
	if d.Status != structs.DeploymentStatusRunning {
		return false
	}
	healthy := make(map[string]bool, len(allocs))
	for _, a := range allocs {
		if !a.TerminalStatus() && a.DeploymentStatus != nil && isSet(a.DeploymentStatus.Healthy) {
			healthy[a.ID] = true
		}
	}
	any := false
	for _, st := range d.TaskGroups {
		if st == nil || st.DesiredCanaries == 0 {
			continue
		}
		if !st.AutoPromote || st.Promoted || len(st.PlacedCanaries) < st.DesiredCanaries {
			return false
		}
		n := 0
		for _, id := range st.PlacedCanaries {
			if healthy[id] {
				n++
			}
		}
		if n < st.DesiredCanaries {
			return false
		}
		any = true
	}
	return any
}

// rescheduleExhausted reports whether an unhealthy allocation may not be
// replaced any more under its group's reschedule policy: the policy allows no
// attempt, or the allocation's tracker holds Attempts reschedules within the
// policy's Interval. Unlimited policies (and groups without one) never are.
func rescheduleExhausted(a *structs.Allocation, current *structs.Job, now time.Time) bool {
	job := a.Job
	if job == nil {
		job = current
	}
	tg := job.LookupTaskGroup(a.TaskGroup)
	if tg == nil || tg.ReschedulePolicy == nil {
		return false
	}
	p := tg.ReschedulePolicy
	if p.Unlimited {
		return false
	}
	if p.Attempts <= 0 {
		return true
	}
	n := 0
	if a.RescheduleTracker != nil {
		from := now.Add(-p.Interval).UnixNano()
		for _, ev := range a.RescheduleTracker.Events {
			if ev != nil && (p.Interval <= 0 || ev.RescheduleTime > from) {
				n++
			}
		}
	}
	return n >= p.Attempts
}

// rollbackTarget returns the latest stable version of the job's current
// incarnation (current's CreateIndex) older than the deployment's, or nil.
func rollbackTarget(versions []*structs.Job, d *structs.Deployment, current *structs.Job) *structs.Job {
	var best *structs.Job
	for _, j := range versions {
		if j == nil || !j.Stable || j.Version >= d.JobVersion || j.CreateIndex != current.CreateIndex {
			continue
		}
		if best == nil || j.Version > best.Version {
			best = j
		}
	}
	return best
}

// latestEvalIndex is the state index the job's newest evaluation was (or
// will be) computed at: allocations whose health changed after it have not
// been seen by the scheduler yet. Evaluations that will not run soon (a
// blocked one waits for capacity, a delayed one for its time) do not count:
// they must not hold the rollout back.
func latestEvalIndex(evals []*structs.Evaluation, now time.Time) uint64 {
	var newest *structs.Evaluation
	for _, e := range evals {
		if e.Status == structs.EvalStatusBlocked || e.WaitUntil.After(now) {
			continue
		}
		if newest == nil || e.CreateIndex > newest.CreateIndex {
			newest = e
		}
	}
	if newest == nil {
		return 0
	}
	if newest.SnapshotIndex != 0 {
		return newest.SnapshotIndex
	}
	return newest.CreateIndex
}

func sortedGroups(d *structs.Deployment) []string {
	out := make([]string, 0, len(d.TaskGroups))
	for name, st := range d.TaskGroups {
		if st != nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func isSet(b *bool) bool { return b != nil && *b }
