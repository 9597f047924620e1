package allocrunner

import (
	"github.com/drover-project/drover/internal/client/cpuset"
	"github.com/drover-project/drover/internal/structs"
)

// allocCores is every core the allocation's tasks reserve.
func allocCores(a *structs.Allocation) cpuset.Set {
	if a == nil || a.AllocatedResources == nil {
		return cpuset.Set{}
	}
	var ids []uint16
	for _, t := range a.AllocatedResources.Tasks {
		if t != nil {
			ids = append(ids, t.Cpu.ReservedCores...)
		}
	}
	return cpuset.New(ids...)
}

// holdCores takes the allocation's reserved cores out of the node's shared
// cpuset, moving the running tasks without reserved cores off them, before
// any of its tasks starts. It runs in New: a restarted client holds the
// cores of every restored allocation before any task is re-attached.
func (ar *AllocRunner) holdCores() {
	ar.cfg.Cpusets.AddAlloc(ar.cfg.Alloc.ID, allocCores(ar.cfg.Alloc))
}

// releaseCores gives the cores back once the runner is done for good (every
// task dead). A detached runner keeps them: its tasks still run, and the
// next client process holds them again.
func (ar *AllocRunner) releaseCores() {
	if ar.detached() {
		return
	}
	ar.cfg.Cpusets.RemoveAlloc(ar.cfg.Alloc.ID)
}
