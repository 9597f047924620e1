package fsm

import (
	"github.com/drover-project/drover/internal/structs"
)

// applyNodeBatchStatus applies many node status changes and their evals at
// one index. A node deleted since the leader built the entry is skipped
// (every server skips it alike, so the FSM stays deterministic).
func (f *FSM) applyNodeBatchStatus(buf []byte, index uint64) error {
	var req structs.NodeBatchUpdateStatusRequest
	if err := decode(buf, &req, "node batch status update"); err != nil {
		return err
	}
	if err := checkEvals(req.Evals); err != nil {
		return err
	}
	st := f.State()
	for _, u := range req.Updates {
		if u == nil {
			continue
		}
		if n, err := st.NodeByID(nil, u.NodeID); err != nil {
			return err
		} else if n == nil {
			continue
		}
		if err := st.UpdateNodeStatus(index, u.NodeID, u.Status, u.UpdatedAt, u.NodeEvent); err != nil {
			return err
		}
		if u.Status == structs.NodeStatusReady {
			if n, err := st.NodeByID(nil, u.NodeID); err == nil {
				f.capacityChanged(n, index)
			}
		}
	}
	return f.upsertEvals(index, req.Evals)
}
