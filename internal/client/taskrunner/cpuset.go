package taskrunner

import (
	"github.com/drover-project/drover/internal/client/cpuset"
	"github.com/drover-project/drover/internal/drivers"
)

// sharedCpuset is the node's shared cpuset for a task starting now ("":
// none known, or the task reserves cores and runs on them).
func (tr *TaskRunner) sharedCpuset() string {
	if tr.reservesCores() {
		return ""
	}
	return tr.cfg.Cpusets.Shared().String()
}

func (tr *TaskRunner) reservesCores() bool {
	a := tr.cfg.Alloc
	if a == nil || a.AllocatedResources == nil {
		return false
	}
	r := a.AllocatedResources.Tasks[tr.cfg.Task.Name]
	return r != nil && len(r.Cpu.ReservedCores) > 0
}

// trackCpuset puts a running task without reserved cores under the node's
// shared cpuset: it is moved whenever the set changes (a task reserving
// cores starts or stops on the node), until the returned func is called.
// startedWith is the set it was started on ("" for a task re-attached
// after a client restart: it is moved onto the current set at once).
// Tasks of drivers that cannot move a running task are left alone.
func (tr *TaskRunner) trackCpuset(startedWith string) (untrack func()) {
	up, ok := tr.cfg.Driver.(drivers.CpusetUpdater)
	if tr.cfg.Cpusets == nil || !ok || tr.reservesCores() {
		return func() {}
	}
	s, err := cpuset.Parse(startedWith)
	if err != nil {
		s = cpuset.Set{}
	}
	id := tr.taskID
	return tr.cfg.Cpusets.Track(id, s, func(s cpuset.Set) error { return up.UpdateCpuset(id, s.String()) })
}
