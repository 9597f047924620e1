package allocrunner

import (
	"github.com/drover-project/drover/internal/client/state"
	"github.com/drover-project/drover/internal/client/taskrunner"
	"github.com/drover-project/drover/internal/structs"
)

// StateDB is what the runner persists through: the tasks' records and the
// deployment health the client observed (state.DB).
type StateDB interface {
	taskrunner.StateDB
	PutDeploymentStatus(allocID string, s *structs.AllocDeploymentStatus) error
	PutCheckResults(allocID string, results map[string]*state.CheckResult) error
}

// taskStateDB keeps a nil StateDB a nil interface for the task runners.
func taskStateDB(db StateDB) taskrunner.StateDB {
	if db == nil {
		return nil
	}
	return db
}

// Restore loads what an earlier client process stored for this allocation:
// each task's state and handle, the deployment health it had observed
// (newer than the server's copy when the client died before reporting it),
// and its checks' latest results (checks_persist.go).
// Call it before Start.
func (ar *AllocRunner) Restore(rec *state.AllocRecord) {
	if rec == nil {
		return
	}
	if ds := rec.DeploymentStatus; ds != nil {
		ar.mu.Lock()
		a := *ar.alloc
		a.DeploymentStatus = ds
		ar.alloc = &a
		ar.mu.Unlock()
	}
	for _, e := range ar.tasks {
		if tr := rec.Tasks[e.tr.Task().Name]; tr != nil {
			e.tr.Restore(tr.State, tr.Local)
		}
	}
	ar.checks.restore(rec.Checks)
}

// Detach stops supervising the allocation without stopping its tasks (the
// client shuts down; a later client restores it) and waits until every
// task runner has let go.
func (ar *AllocRunner) Detach() {
	ar.detachOnce.Do(func() { close(ar.detachCh) })
	for _, e := range ar.tasks {
		e.tr.Detach()
	}
	if !ar.started() {
		return
	}
	for _, e := range ar.tasks {
		<-e.tr.WaitCh()
	}
	<-ar.waitCh
}

func (ar *AllocRunner) detached() bool { return isClosed(ar.detachCh) }

// started reports whether Run was started (task runners exist as
// goroutines only then).
func (ar *AllocRunner) started() bool {
	started := true
	ar.runOnce.Do(func() { started = false })
	if !started {
		// Never ran: nothing to wait for; Run must not start now.
		close(ar.waitCh)
	}
	return started
}

// hold waits for cfg.Hold; false when the runner was detached meanwhile.
func (ar *AllocRunner) hold() bool {
	if ar.cfg.Hold == nil {
		return true
	}
	select {
	case <-ar.cfg.Hold:
		return true
	case <-ar.killCh:
		return true
	case <-ar.detachCh:
		return false
	}
}

// persistDeployment stores the deployment health being reported.
func (ar *AllocRunner) persistDeployment(a *structs.Allocation) {
	if ar.cfg.StateDB == nil || a.DeploymentStatus == nil || ar.detached() {
		return
	}
	if err := ar.cfg.StateDB.PutDeploymentStatus(a.ID, a.DeploymentStatus); err != nil {
		ar.logger.Error("failed to persist deployment status", "error", err)
	}
}
