package fsm

import (
	"fmt"
	"sort"

	"github.com/drover-project/drover/internal/structs"
)

func (f *FSM) applyEvalUpdate(buf []byte, index uint64) error {
	var req structs.EvalUpdateRequest
	if err := decode(buf, &req, "eval update"); err != nil {
		return err
	}
	return f.upsertEvals(index, req.Evals)
}

func (f *FSM) applyEvalDelete(buf []byte, index uint64) error {
	var req structs.EvalDeleteRequest
	if err := decode(buf, &req, "eval delete"); err != nil {
		return err
	}
	return f.State().DeleteEval(index, req.Evals, req.Allocs)
}

func (f *FSM) applyAllocClientUpdate(buf []byte, index uint64) error {
	var req structs.AllocUpdateRequest
	if err := decode(buf, &req, "alloc client update"); err != nil {
		return err
	}
	if err := checkEvals(req.Evals); err != nil {
		return err
	}
	compactClientAllocs(req.Alloc)
	st := f.State()
	// Only allocations that became client-terminal free capacity.
	nodes, err := st.UpdateAllocsFromClientFreed(index, req.Alloc)
	if err != nil {
		return err
	}
	if err := st.UpsertEvals(index, req.Evals); err != nil {
		return err
	}
	f.nodesCapacityChanged(nodes, index)
	f.notifyEvals(req.Evals)
	return nil
}

func (f *FSM) applyPlanResults(buf []byte, index uint64) error {
	var req structs.ApplyPlanResultsRequest
	if err := decode(buf, &req, "plan results"); err != nil {
		return err
	}
	st := f.State()
	compactPlanAllocs([]*structs.ApplyPlanResultsRequest{&req}, f.knownNodeStrings(st))
	if err := st.UpsertPlanResults(index, &req); err != nil {
		return err
	}
	f.planResultsApplied(index, []*structs.ApplyPlanResultsRequest{&req})
	return nil
}

// applyPlanResultsBatch applies several plans in one transaction (all or
// nothing), then reports what they changed as if applied one by one.
func (f *FSM) applyPlanResultsBatch(buf []byte, index uint64) error {
	var req structs.ApplyPlanResultsBatchRequest
	if err := decode(buf, &req, "plan results batch"); err != nil {
		return err
	}
	for i, p := range req.Plans {
		if p == nil {
			return fmt.Errorf("fsm: plan results batch entry at index %d: plan %d is empty", index, i)
		}
	}
	// Status updates of evaluations whose plans committed in earlier
	// entries: written first, so if they fail no plan of the entry is
	// written.
	if err := f.upsertEvals(index, req.EvalUpdates); err != nil {
		return err
	}
	if len(req.Plans) == 0 {
		return nil
	}
	st := f.State()
	compactPlanAllocs(req.Plans, f.knownNodeStrings(st))
	if err := st.UpsertPlanResultsBatch(index, req.Plans); err != nil {
		return err
	}
	f.planResultsApplied(index, req.Plans)
	return nil
}

// planResultsApplied reports freed capacity on the nodes of stopped and
// preempted allocations, and the preemption evals, to the sink.
func (f *FSM) planResultsApplied(index uint64, reqs []*structs.ApplyPlanResultsRequest) {
	if f.eventSink() == nil {
		return
	}
	st := f.State()
	seen := map[string]bool{}
	var nodes []string
	var evals []*structs.Evaluation
	for _, req := range reqs {
		for _, list := range [][]*structs.Allocation{req.AllocsStopped, req.AllocsPreempted} {
			for _, diff := range list {
				if diff == nil {
					continue
				}
				stored, err := st.AllocByID(nil, diff.ID)
				if err != nil || stored == nil || seen[stored.NodeID] {
					continue
				}
				seen[stored.NodeID] = true
				nodes = append(nodes, stored.NodeID)
			}
		}
		evals = append(evals, req.PreemptionEvals...)
	}
	sort.Strings(nodes)
	f.nodesCapacityChanged(nodes, index)
	f.notifyEvals(evals)
}

// nodesCapacityChanged reports capacity changes for existing nodes.
func (f *FSM) nodesCapacityChanged(nodeIDs []string, index uint64) {
	if f.eventSink() == nil {
		return
	}
	st := f.State()
	for _, id := range nodeIDs {
		if n, err := st.NodeByID(nil, id); err == nil && n != nil {
			f.capacityChanged(n, index)
		}
	}
}
