package allocrunner

import (
	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/client/state"
)

// Check results survive a client restart, as Nomad's client keeps them in
// its state: every change of a check's result (status, code, output, or the
// run of consecutive outcomes its thresholds count) is written to the state
// database; a restored runner shows the stored results until its checks run
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

// persist writes every running check's latest result when something other
// than its timestamp changed since the last write. Serialised so a later
// snapshot is never overwritten by an earlier one.
func (cr *checkRunner) persist() {
	db := cr.ar.cfg.StateDB
	if db == nil || cr.ar.detached() {
		return
	}
	cr.persistMu.Lock()
	defer cr.persistMu.Unlock()
	cr.mu.Lock()
	out := make(map[string]*state.CheckResult, len(cr.checks))
	changed := len(cr.checks) != len(cr.persisted)
	for id, st := range cr.checks {
		r := &state.CheckResult{Status: st.status, Successes: capped(st.successes, st.check.SuccessBeforePassing),
			Failures: capped(st.failures, st.check.FailuresBeforeCritical)}
		out[id] = r
		if old, ok := cr.persisted[id]; !ok || !sameResult(old, r) {
			changed = true
		}
	}
	cr.mu.Unlock()
	if !changed {
		return
	}
	if err := db.PutCheckResults(cr.ar.ID(), out); err != nil {
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
