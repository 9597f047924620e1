package scheduler

import (
	"github.com/drover-project/drover/internal/scheduler/feasible"
	"github.com/drover-project/drover/internal/structs"
)

// inplaceUpdate is the reconciler's UpdateFn: it tries the new group on
// the allocation's own node with the allocation itself removed (the
// feasibility and rank chain on that one node, without preemption). When
// it fits, the allocation is updated where it runs: same ID, the new job,
// new CPU and memory, and the ports, devices and reserved cores it holds.
// A node that is gone or no longer in the job's datacenters or pool, or
// where the group no longer fits, makes the update destructive. The plan
// is left as it was found.
func (s *GenericScheduler) inplaceUpdate(existing *structs.Allocation, job *structs.Job, tg *structs.TaskGroup) (bool, *structs.Allocation) {
	node, err := s.state.NodeByID(nil, existing.NodeID)
	if err != nil || node == nil || !feasible.InJobScope(node, job) {
		return true, nil
	}
	var option *feasible.RankedNode
	var metrics *structs.AllocMetric
	s.ctx.WithoutExplain(func() {
		// The allocation leaves the node for the check: a stop naming it
		// is all the placement context reads (no copy of the allocation).
		s.plan.NodeUpdate[node.ID] = append(s.plan.NodeUpdate[node.ID], &structs.Allocation{ID: existing.ID, NodeID: node.ID})
		s.stack.SetNodes([]*structs.Node{node})
		s.stack.SetPreemption(false)
		option = s.stack.Select(tg, &feasible.SelectOptions{AllocName: existing.Name})
		metrics = s.ctx.Metrics()
		s.stack.SetPreemption(s.preempt)
		s.stack.SetScopedNodes(s.nodes.nodes, s.nodes.byDC)
		s.plan.PopUpdate(existing)
	})
	if option == nil || len(option.Preempted) > 0 {
		return true, nil
	}

	old := existing.AllocatedResources
	tasks := make(map[string]*structs.AllocatedTaskResources, len(option.TaskResources))
	for name, tr := range option.TaskResources {
		c := *tr
		c.Networks, c.Devices, c.Cpu.ReservedCores = nil, nil, nil
		if old != nil {
			if was, ok := old.Tasks[name]; ok && was != nil {
				c.Networks, c.Devices, c.Cpu.ReservedCores = was.Networks, was.Devices, was.Cpu.ReservedCores
			}
		}
		tasks[name] = &c
	}
	res := &structs.AllocatedResources{Tasks: tasks, Shared: structs.AllocatedSharedResources{DiskMB: option.Shared.DiskMB}}
	if old != nil {
		res.Shared.Networks, res.Shared.Ports = old.Shared.Networks, old.Shared.Ports
	}
	for _, t := range tg.Tasks {
		if t.Lifecycle != nil {
			if res.TaskLifecycles == nil {
				res.TaskLifecycles = make(map[string]*structs.TaskLifecycle)
			}
			res.TaskLifecycles[t.Name] = t.Lifecycle
		}
	}
	updated := existing.CopySkipJob()
	updated.Job = job
	updated.EvalID = s.eval.ID
	updated.AllocatedResources = res
	if existing.Metrics != nil {
		updated.Metrics = existing.Metrics
	} else {
		updated.Metrics = metrics
	}
	return false, updated
}
