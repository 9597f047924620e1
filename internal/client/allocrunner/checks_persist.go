package allocrunner

import (
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/client/state"
)

// Check results survive a client restart, as Nomad's client keeps them in
// its state: every change of a check's result (status, code, output, or the
// run of consecutive outcomes its thresholds count) is written to the state
// database before it is shown (a client shut down right after showing a
// result restores that result, not an older one); a restored runner shows the stored results until its checks run
// again, and a check that starts again continues from its stored result
// and its counts (a passing check with success_before_passing does not
// start over as pending). A stopped allocation's results are cleared; a collected one's
// are deleted with the rest of its state.

// restore keeps the stored results for the checks that start again.
func (cr *checkRunner) restore(results map[string]*state.CheckResult) {
	if len(results) == 0 {
		return
	}
	cr.mu.Lock()
	defer cr.mu.Unlock()
	cr.restored = results
	cr.persisted = results // what the database holds
}

// takeRestoredLocked hands a starting check its stored result (once).
func (cr *checkRunner) takeRestoredLocked(st *checkState) {
	r, ok := cr.restored[st.id]
	if !ok || r == nil {
		return
	}
	delete(cr.restored, st.id)
	st.status.Status, st.status.StatusCode, st.status.Output = r.Status.Status, r.Status.StatusCode, r.Status.Output
	st.status.Timestamp = r.Status.Timestamp
	st.successes, st.failures = r.Successes, r.Failures
}

// checkResult is a check's result and its runs of outcomes.
type checkResult struct {
	status              api.AllocCheckStatus
	successes, failures int
}

// persist writes every running check's latest result when something other
// than its timestamp changed since the last write. Serialised so a later
// snapshot is never overwritten by an earlier one.
func (cr *checkRunner) persist() {
	cr.persistMu.Lock()
	defer cr.persistMu.Unlock()
	cr.mu.Lock()
	out := cr.toStoreLocked(nil, checkResult{})
	cr.mu.Unlock()
	if out != nil {
		cr.storeLocked(out)
	}
}

// toStoreLocked returns every running check's result, over's replaced by
// next (a new result, not shown yet), or nil when nothing but timestamps
// changed since the last write or there is no database. A detached runner
// keeps what is stored (its checks stopping must not clear it), except for
// a new result: it is shown right after, so it is stored even while the
// client shuts down. Callers hold persistMu and mu.
func (cr *checkRunner) toStoreLocked(over *checkState, next checkResult) map[string]*state.CheckResult {
	if cr.ar.cfg.StateDB == nil || (over == nil && cr.ar.detached()) {
		return nil
	}
	out := make(map[string]*state.CheckResult, len(cr.checks))
	changed := len(cr.checks) != len(cr.persisted)
	for id, st := range cr.checks {
		cur := checkResult{status: st.status, successes: st.successes, failures: st.failures}
		if st == over {
			cur = next
		}
		r := &state.CheckResult{Status: cur.status, Successes: capped(cur.successes, st.check.SuccessBeforePassing),
			Failures: capped(cur.failures, st.check.FailuresBeforeCritical)}
		out[id] = r
		if old, ok := cr.persisted[id]; !ok || !sameResult(old, r) {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return out
}

// storeLocked writes out (the caller holds persistMu).
func (cr *checkRunner) storeLocked(out map[string]*state.CheckResult) {
	if err := cr.ar.cfg.StateDB.PutCheckResults(cr.ar.ID(), out); err != nil {
		cr.ar.logger.Warn("failed to persist check results", "error", err)
		return
	}
	cr.persisted = out
}

// capped bounds a run of outcomes at what its threshold needs, so a steady
// check stops producing writes.
func capped(n, threshold int) int { return min(n, max(threshold, 1)) }

func sameResult(a, b *state.CheckResult) bool {
	x, y := a.Status, b.Status
	x.Timestamp, y.Timestamp = 0, 0
	return a.Successes == b.Successes && a.Failures == b.Failures && sameStatus(x, y)
}

func sameStatus(a, b api.AllocCheckStatus) bool {
	return a.ID == b.ID && a.Check == b.Check && a.Group == b.Group && a.Mode == b.Mode && a.Output == b.Output &&
		a.Service == b.Service && a.Status == b.Status && a.StatusCode == b.StatusCode && a.Task == b.Task
}
