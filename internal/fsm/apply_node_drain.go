package fsm

import "github.com/drover-project/drover/internal/structs"

// applyNodeDrain sets or cancels one node's drain.
func (f *FSM) applyNodeDrain(buf []byte, index uint64) error {
	var req structs.NodeUpdateDrainRequest
	if err := decode(buf, &req, "node drain update"); err != nil {
		return err
	}
	st := f.State()
	if err := st.UpdateNodeDrain(index, &req); err != nil {
		return err
	}
	if req.DrainStrategy == nil && req.MarkEligible {
		f.nodeBackInService(req.NodeID, index)
	}
	return nil
}

// applyNodeBatchDrain applies the drainer's completions.
func (f *FSM) applyNodeBatchDrain(buf []byte, index uint64) error {
	var req structs.BatchNodeUpdateDrainRequest
	if err := decode(buf, &req, "node batch drain update"); err != nil {
		return err
	}
	if err := f.State().UpdateNodeDrainBatch(index, &req); err != nil {
		return err
	}
	for id, u := range req.Updates {
		if u != nil && u.DrainStrategy == nil && u.MarkEligible {
			f.nodeBackInService(id, index)
		}
	}
	return nil
}

// nodeBackInService unblocks evaluations waiting for capacity when a node
// becomes a placement target again.
func (f *FSM) nodeBackInService(nodeID string, index uint64) {
	if n, err := f.State().NodeByID(nil, nodeID); err == nil && n != nil && n.Ready() {
		f.capacityChanged(n, index)
	}
}
