package taskrunner

import (
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Restart policy defaults (Nomad's) when a task carries none.
var (
	defaultServiceRestart = structs.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: structs.RestartPolicyModeFail}
	defaultBatchRestart   = structs.RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: structs.RestartPolicyModeFail}
)

// decision is what the restart tracker says after a task exits or fails to
// start.
type decision struct {
	restart bool
	failed  bool          // when !restart: the task is failed
	wait    time.Duration // when restart: delay before the next start
	reason  string
}

// restartTracker counts restarts within the policy interval.
type restartTracker struct {
	policy structs.RestartPolicy
	batch  bool
	// onSuccess: a successful exit is restarted (counted against the
	// policy). False for batch tasks and for ephemeral lifecycle tasks
	// (prestart and poststart without sidecar, poststop), which complete
	// on exit 0 whatever the job type.
	onSuccess bool
	start     time.Time // start of the current interval
	count     int
}

func newRestartTracker(p *structs.RestartPolicy, jobType string, lc *structs.TaskLifecycle) *restartTracker {
	batch := jobType == structs.JobTypeBatch || jobType == structs.JobTypeSysBatch
	rt := &restartTracker{batch: batch, onSuccess: !batch}
	if lc != nil {
		switch lc.Hook {
		case "prestart", "poststart":
			// A sidecar is meant to keep running, even in a batch job.
			rt.onSuccess = lc.Sidecar
		case "poststop":
			rt.onSuccess = false
		}
	}
	rt.setPolicy(p)
	return rt
}

// setPolicy takes a (possibly changed) policy; the restarts already counted
// in the current interval still count.
func (rt *restartTracker) setPolicy(p *structs.RestartPolicy) {
	switch {
	case p != nil:
		rt.policy = *p
	case rt.batch:
		rt.policy = defaultBatchRestart
	default:
		rt.policy = defaultServiceRestart
	}
	if rt.policy.Mode == "" {
		rt.policy.Mode = structs.RestartPolicyModeFail
	}
}

// next decides after an exit (res != nil) or a start failure (startErr).
func (rt *restartTracker) next(now time.Time, successfulExit, startFailed bool) decision {
	if successfulExit && !rt.onSuccess {
		return decision{reason: "Task completed successfully"}
	}
	if rt.start.IsZero() || (rt.policy.Interval > 0 && now.Sub(rt.start) >= rt.policy.Interval) {
		rt.start = now
		rt.count = 0
	}
	if rt.count < rt.policy.Attempts {
		rt.count++
		why := "Restart within policy"
		if startFailed {
			why = "Start failure; restart within policy"
		}
		return decision{restart: true, wait: rt.policy.Delay, reason: why}
	}
	if rt.policy.Mode == structs.RestartPolicyModeDelay {
		// Wait out the interval, then start a new one.
		wait := rt.policy.Interval - now.Sub(rt.start)
		if wait < rt.policy.Delay {
			wait = rt.policy.Delay
		}
		rt.start = time.Time{}
		return decision{restart: true, wait: wait, reason: "Exceeded allowed attempts, applying a delay"}
	}
	return decision{failed: true, reason: "Exceeded allowed attempts in interval and policy mode is \"fail\""}
}
