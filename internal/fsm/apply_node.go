package fsm

import (
	"fmt"

	"github.com/drover-project/drover/internal/structs"
)

func (f *FSM) applyNodeRegister(buf []byte, index uint64) error {
	var req structs.NodeRegisterRequest
	if err := decode(buf, &req, "node register"); err != nil {
		return err
	}
	if req.Node == nil {
		return fmt.Errorf("fsm: node register without node")
	}
	compactNode(req.Node)
	st := f.State()
	if ex, err := st.NodeByID(nil, req.Node.ID); err == nil && ex != nil {
		keepNodeStrings(req.Node, ex)
	}
	delete(f.nodeStrs, req.Node.ID)
	if err := st.UpsertNode(index, req.Node); err != nil {
		return err
	}
	if n, err := st.NodeByID(nil, req.Node.ID); err == nil && n != nil && n.Status == structs.NodeStatusReady {
		f.capacityChanged(n, index)
	}
	return nil
}

func (f *FSM) applyNodeDeregister(buf []byte, index uint64) error {
	var req structs.NodeDeregisterRequest
	if err := decode(buf, &req, "node deregister"); err != nil {
		return err
	}
	for _, id := range req.NodeIDs {
		delete(f.nodeStrs, id)
	}
	return f.State().DeleteNode(index, req.NodeIDs)
}

func (f *FSM) applyNodeStatus(buf []byte, index uint64) error {
	var req structs.NodeUpdateStatusRequest
	if err := decode(buf, &req, "node status update"); err != nil {
		return err
	}
	st := f.State()
	if err := st.UpdateNodeStatus(index, req.NodeID, req.Status, req.UpdatedAt, req.NodeEvent); err != nil {
		return err
	}
	if req.Status == structs.NodeStatusReady {
		if n, err := st.NodeByID(nil, req.NodeID); err == nil {
			f.capacityChanged(n, index)
		}
	}
	return nil
}

func (f *FSM) applyNodeEligibility(buf []byte, index uint64) error {
	var req structs.NodeUpdateEligibilityRequest
	if err := decode(buf, &req, "node eligibility update"); err != nil {
		return err
	}
	st := f.State()
	if err := st.UpdateNodeEligibility(index, req.NodeID, req.Eligibility, req.UpdatedAt, req.NodeEvent); err != nil {
		return err
	}
	if req.Eligibility == structs.NodeSchedulingEligible {
		if n, err := st.NodeByID(nil, req.NodeID); err == nil && n != nil && n.Status == structs.NodeStatusReady {
			f.capacityChanged(n, index)
		}
	}
	return nil
}
