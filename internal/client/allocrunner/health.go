package allocrunner

import (
	"fmt"
	"sync"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Values of an update block's health_check.
const (
	HealthCheckChecks     = "checks"
	HealthCheckTaskStates = "task_states"
	HealthCheckManual     = "manual"
)

// Defaults of an update block (Nomad's) for fields neither the group nor
// the job sets.
const (
	defaultMinHealthyTime  = 10 * time.Second
	defaultHealthyDeadline = 5 * time.Minute
)

// healthPolicy is the part of a group's update block the client acts on.
type healthPolicy struct {
	mode       string
	minHealthy time.Duration
	deadline   time.Duration
}

// healthPolicyFor says how the client must judge the allocation's health
// for its deployment, and false when the client sets nothing: no deployment,
// no update strategy, or health_check "manual" (the operator sets it through
// the deployment's allocation-health endpoint).
//
// health_check "checks" (the default) judges task states as "task_states"
// does and, when the group has nomad-provider service checks, also waits
// for them to pass (gateChecks).
func healthPolicyFor(a *structs.Allocation) (healthPolicy, bool) {
	if a == nil || a.DeploymentID == "" || a.Job == nil {
		return healthPolicy{}, false
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return healthPolicy{}, false
	}
	group, job := tg.Update, a.Job.Update
	if group == nil && job == nil {
		return healthPolicy{}, false
	}
	p := healthPolicy{mode: HealthCheckChecks, minHealthy: defaultMinHealthyTime, deadline: defaultHealthyDeadline}
	// The group's fields win; the job's fill what the group leaves unset.
	for _, u := range []*structs.UpdateStrategy{job, group} {
		if u == nil {
			continue
		}
		if u.HealthCheck != nil && *u.HealthCheck != "" {
			p.mode = *u.HealthCheck
		}
		if u.MinHealthyTime != nil {
			p.minHealthy = *u.MinHealthyTime
		}
		if u.HealthyDeadline != nil {
			p.deadline = *u.HealthyDeadline
		}
	}
	if p.mode == HealthCheckManual {
		return p, false
	}
	return p, true
}

// healthTask is one task as the health judgement sees it.
type healthTask struct {
	name  string
	phase int
	// sidecar marks a poststart task that keeps running (prestart
	// sidecars have their own phase).
	sidecar bool
	state   *structs.TaskState
}

// ephemeral reports whether the task is meant to end: a prestart or
// poststart task that is not a sidecar.
func (t healthTask) ephemeral() bool {
	return t.phase == phasePrestart || (t.phase == phasePoststart && !t.sidecar)
}

// healthVerdict is the outcome of one judgement.
type healthVerdict struct {
	decided bool
	healthy bool
	// reason says why an allocation is unhealthy.
	reason string
	// deadline is set when the healthy deadline passed undecided.
	deadline bool
	// recheck is when, without any task change, to judge again.
	recheck time.Time
}

// judgeHealth decides an allocation's deployment health at now, for a watch
// that began at start:
//   - a task that failed, or a task meant to keep running that ended, makes
//     it unhealthy at once;
//   - it is healthy when every task that must run is running and none has
//     (re)started during the last min_healthy_time, counted from the latest
//     task start or from the watch's start, whichever is later (a restart
//     gives the task a new StartedAt and so starts the wait again);
//   - healthy_deadline passing first makes it unhealthy.
//
// Poststop tasks are not judged (they run after the others end), nor are
// prestart or poststart tasks that are not sidecars once they completed
// successfully: they were meant to end.
func judgeHealth(tasks []healthTask, p healthPolicy, start, now time.Time) healthVerdict {
	allRunning := true
	var latest time.Time
	for _, t := range tasks {
		st := t.state
		if t.phase == phasePoststop || st == nil {
			continue
		}
		if st.Failed {
			return healthVerdict{decided: true, reason: fmt.Sprintf("task %q failed", t.name)}
		}
		if st.State == structs.TaskStateDead {
			if t.ephemeral() {
				continue
			}
			return healthVerdict{decided: true, reason: fmt.Sprintf("task %q is no longer running", t.name)}
		}
		if st.State != structs.TaskStateRunning {
			allRunning = false
			continue
		}
		if st.StartedAt.After(latest) {
			latest = st.StartedAt
		}
	}
	deadlineAt := start.Add(p.deadline)
	if allRunning {
		healthyAt := latest
		if start.After(healthyAt) {
			healthyAt = start
		}
		healthyAt = healthyAt.Add(p.minHealthy)
		if !healthyAt.After(now) && !healthyAt.After(deadlineAt) {
			return healthVerdict{decided: true, healthy: true}
		}
		if healthyAt.Before(deadlineAt) && now.Before(deadlineAt) {
			return healthVerdict{recheck: healthyAt}
		}
	}
	if !now.Before(deadlineAt) {
		return healthVerdict{decided: true, deadline: true,
			reason: fmt.Sprintf("not healthy by its healthy_deadline of %s", p.deadline)}
	}
	return healthVerdict{recheck: deadlineAt}
}

// gateChecks holds a healthy verdict until the allocation's checks have
// all passed for min_healthy_time (since: when they all began passing;
// zero while one does not). Past the healthy deadline the allocation is
// unhealthy.
func gateChecks(v healthVerdict, since time.Time, p healthPolicy, start, now time.Time) healthVerdict {
	if !v.decided || !v.healthy {
		return v
	}
	deadlineAt := start.Add(p.deadline)
	if !since.IsZero() {
		healthyAt := since.Add(p.minHealthy)
		if !healthyAt.After(now) {
			return v
		}
		if healthyAt.Before(deadlineAt) {
			return healthVerdict{recheck: healthyAt}
		}
	}
	if !now.Before(deadlineAt) {
		return healthVerdict{decided: true, deadline: true,
			reason: fmt.Sprintf("service checks not passing by its healthy_deadline of %s", p.deadline)}
	}
	return healthVerdict{recheck: deadlineAt}
}

// deadlineMessage is the event message Nomad records on a task that kept
// its allocation from being healthy by the deadline ("" for a task that did
// not).
func deadlineMessage(t healthTask, p healthPolicy, deadlineAt time.Time) string {
	st := t.state
	if t.phase == phasePoststop || st == nil {
		return ""
	}
	if st.State == structs.TaskStateDead && t.ephemeral() && !st.Failed {
		return ""
	}
	if st.State != structs.TaskStateRunning {
		return fmt.Sprintf("Task not running by healthy_deadline of %s", p.deadline)
	}
	if st.StartedAt.Add(p.minHealthy).After(deadlineAt) {
		return fmt.Sprintf("Task not running for min_healthy_time of %s by healthy_deadline of %s", p.minHealthy, p.deadline)
	}
	return ""
}

// healthWatcher keeps one allocation's deployment health: it judges it once
// per deployment (a new DeploymentID, as an in-place update into a new
// deployment brings, starts a new judgement) and holds the result the client
// sends with the allocation's updates. The client sends only health it
// decided itself (before a restart, too), never a copy of the servers',
// so it can never undo health an operator set by hand.
type healthWatcher struct {
	ar *AllocRunner

	mu sync.Mutex
	// begun is set once the first deployment ID was taken.
	begun bool
	// deploymentID is the deployment the current judgement (or result) is for.
	deploymentID string
	// result is this client's decision for deploymentID, nil until made.
	result *structs.AllocDeploymentStatus
	// stop ends the current watch (nil when none runs).
	stop chan struct{}

	poke chan struct{}
}

func newHealthWatcher(ar *AllocRunner) *healthWatcher {
	return &healthWatcher{ar: ar, poke: make(chan struct{}, 1)}
}

// taskChanged wakes the watch to judge again.
func (h *healthWatcher) taskChanged() {
	select {
	case h.poke <- struct{}{}:
	default:
	}
}

// observe takes the server's copy of the allocation.
//
// The first copy, or one for another deployment than the one judged,
// starts a new judgement when the group's update block asks the client for
// one. If that first copy already holds health (a restored allocation: this
// client decided it before it restarted, perhaps without reporting it), the
// client keeps sending that health instead of judging again.
//
// A later copy of the same deployment that holds health is the servers'
// word: it ends a judgement still running, and if it differs from what this
// client decided (an operator set it), the client stops sending its own so
// it never undoes the operator's. Otherwise nothing changes.
func (h *healthWatcher) observe(a *structs.Allocation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var server *structs.AllocDeploymentStatus
	if a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
		server = a.DeploymentStatus
	}
	if h.begun && a.DeploymentID == h.deploymentID {
		if server == nil {
			return
		}
		if h.stop != nil {
			close(h.stop)
			h.stop = nil
		}
		if h.result != nil && (*h.result.Healthy != *server.Healthy || !h.result.Timestamp.Equal(server.Timestamp)) {
			h.result = nil
		}
		return
	}
	first := !h.begun
	h.begun = true
	if h.stop != nil {
		close(h.stop)
		h.stop = nil
	}
	h.deploymentID = a.DeploymentID
	h.result = nil
	p, ok := healthPolicyFor(a)
	if !ok || a.ServerTerminalStatus() {
		return
	}
	if server != nil {
		if first {
			healthy := *server.Healthy
			h.result = &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: server.Timestamp}
		}
		return
	}
	stop := make(chan struct{})
	h.stop = stop
	go h.watch(stop, a.DeploymentID, p, h.ar.cfg.Clock())
}

// status is the deployment status to send for the server's copy a: this
// client's decision (with the server's Canary flag and ModifyIndex), or nil
// when it has decided nothing for a's deployment.
func (h *healthWatcher) status(a *structs.Allocation) *structs.AllocDeploymentStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.result == nil || a.DeploymentID != h.deploymentID {
		return nil
	}
	ds := *h.result
	if a.DeploymentStatus != nil {
		ds.Canary = a.DeploymentStatus.Canary
		ds.ModifyIndex = a.DeploymentStatus.ModifyIndex
	}
	return &ds
}

// decide stores the verdict if the watch is still the current one.
func (h *healthWatcher) decide(stop chan struct{}, deploymentID string, healthy bool, at time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop != stop || h.deploymentID != deploymentID {
		return false
	}
	h.result = &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: at}
	h.stop = nil
	return true
}

func (h *healthWatcher) healthTasks() []healthTask {
	out := make([]healthTask, 0, len(h.ar.tasks))
	for _, e := range h.ar.tasks {
		task := e.tr.Task()
		out = append(out, healthTask{name: task.Name, phase: e.phase, state: e.tr.State(),
			sidecar: task.Lifecycle != nil && task.Lifecycle.Sidecar})
	}
	return out
}

// watch judges health after every task change and at the times the
// judgement names, until it is decided, the allocation is stopped (a
// stopped allocation gets no health), or a newer deployment replaces it.
func (h *healthWatcher) watch(stop chan struct{}, deploymentID string, p healthPolicy, start time.Time) {
	ar := h.ar
	now := ar.cfg.Clock
	// Since Go 1.23 Reset discards a pending fire: no draining needed.
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		// Kill closes killCh before it stops any task, so a task ended by
		// a stop is never judged.
		if isClosed(stop) || isClosed(ar.killCh) {
			return
		}
		tasks := h.healthTasks()
		t := now()
		v := judgeHealth(tasks, p, start, t)
		if p.mode == HealthCheckChecks {
			ar.mu.Lock()
			a := ar.alloc
			ar.mu.Unlock()
			if expectsChecks(a) {
				_, since := ar.checks.gate()
				v = gateChecks(v, since, p, start, t)
			}
		}
		if v.decided {
			if !h.decide(stop, deploymentID, v.healthy, t) {
				return
			}
			if v.healthy {
				ar.logger.Debug("allocation is healthy", "deployment_id", deploymentID)
			} else {
				ar.logger.Info("allocation is unhealthy", "deployment_id", deploymentID, "reason", v.reason)
			}
			if v.deadline {
				deadlineAt := start.Add(p.deadline)
				for i, e := range ar.tasks {
					if msg := deadlineMessage(tasks[i], p, deadlineAt); msg != "" {
						e.tr.EmitEvent(e.tr.NewEvent(structs.TaskAllocUnhealthy, msg))
					}
				}
			}
			ar.report()
			return
		}
		if isClosed(ar.waitCh) {
			return // everything ended and nothing was decided: nothing will change
		}
		timer.Reset(max(v.recheck.Sub(t), time.Millisecond))
		select {
		case <-stop:
			return
		case <-ar.killCh:
			return
		case <-h.poke:
		case <-ar.waitCh:
		case <-timer.C:
		}
	}
}
