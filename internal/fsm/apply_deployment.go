package fsm

import (
	"fmt"

	"github.com/drover-project/drover/internal/structs"
)

// The deployment entries: status changes (with an optional rollback job),
// promotions, allocation health and desired transitions. Each writes in one
// transaction, then tells the sink about the job and evals it wrote.

func (f *FSM) applyDeploymentStatusUpdate(buf []byte, index uint64) error {
	var req structs.DeploymentStatusUpdateRequest
	if err := decode(buf, &req, "deployment status update"); err != nil {
		return err
	}
	if req.DeploymentUpdate == nil {
		return fmt.Errorf("fsm: deployment status update without an update")
	}
	if err := checkOptionalEval(req.Eval); err != nil {
		return err
	}
	if err := f.State().UpdateDeploymentStatus(index, &req); err != nil {
		return err
	}
	return f.deploymentFollowUp(index, req.Job, req.Eval)
}

func (f *FSM) applyDeploymentPromotion(buf []byte, index uint64) error {
	var req structs.ApplyDeploymentPromoteRequest
	if err := decode(buf, &req, "deployment promotion"); err != nil {
		return err
	}
	if err := checkOptionalEval(req.Eval); err != nil {
		return err
	}
	if err := f.State().UpdateDeploymentPromotion(index, &req); err != nil {
		return err
	}
	return f.deploymentFollowUp(index, nil, req.Eval)
}

func (f *FSM) applyDeploymentAllocHealth(buf []byte, index uint64) error {
	var req structs.ApplyDeploymentAllocHealthRequest
	if err := decode(buf, &req, "deployment alloc health"); err != nil {
		return err
	}
	if err := checkOptionalEval(req.Eval); err != nil {
		return err
	}
	if err := f.State().UpdateDeploymentAllocHealth(index, &req); err != nil {
		return err
	}
	return f.deploymentFollowUp(index, req.Job, req.Eval)
}

func (f *FSM) applyAllocDesiredTransition(buf []byte, index uint64) error {
	var req structs.AllocUpdateDesiredTransitionRequest
	if err := decode(buf, &req, "alloc desired transition"); err != nil {
		return err
	}
	if err := checkEvals(req.Evals); err != nil {
		return err
	}
	if err := f.State().UpdateAllocsDesiredTransitions(index, req.Allocs, req.Evals); err != nil {
		return err
	}
	f.notifyEvals(req.Evals)
	return nil
}

func checkOptionalEval(e *structs.Evaluation) error {
	if e == nil {
		return nil
	}
	return checkEvals([]*structs.Evaluation{e})
}

// deploymentFollowUp tells the sink about a rollback job (as a registration)
// and the entry's eval.
func (f *FSM) deploymentFollowUp(index uint64, job *structs.Job, eval *structs.Evaluation) error {
	if job != nil {
		if err := f.jobRegistered(index, job); err != nil {
			return err
		}
	}
	if eval != nil {
		f.notifyEvals([]*structs.Evaluation{eval})
	}
	return nil
}
