package fsm

import (
	"github.com/drover-project/drover/internal/structs"
)

// The entries of garbage collection (internal/server/coregc) and summary
// repair. What they remove is re-checked by the state writes (state/gc.go).

func (f *FSM) applyDeploymentDelete(buf []byte, index uint64) error {
	var req structs.DeploymentDeleteRequest
	if err := decode(buf, &req, "deployment delete"); err != nil {
		return err
	}
	return f.State().DeleteDeployments(index, req.Deployments)
}

func (f *FSM) applyJobBatchDeregister(buf []byte, index uint64) error {
	var req structs.JobBatchDeregisterRequest
	if err := decode(buf, &req, "job batch deregister"); err != nil {
		return err
	}
	purged, err := f.State().DeleteJobsGC(index, req.Jobs)
	if err != nil {
		return err
	}
	for _, j := range purged {
		if err := f.jobPurged(index, j.Namespace, j.ID); err != nil {
			return err
		}
	}
	return nil
}

func (f *FSM) applyNodeBatchDeregister(buf []byte, index uint64) error {
	var req structs.NodeBatchDeregisterRequest
	if err := decode(buf, &req, "node batch deregister"); err != nil {
		return err
	}
	deleted, err := f.State().DeleteNodesGC(index, req.NodeIDs)
	if err != nil {
		return err
	}
	for _, id := range deleted {
		delete(f.nodeStrs, id)
	}
	return nil
}

func (f *FSM) applyReconcileSummaries(buf []byte, index uint64) error {
	var req structs.ReconcileJobSummariesRequest
	if err := decode(buf, &req, "reconcile job summaries"); err != nil {
		return err
	}
	return f.State().UpdateJobSummariesFromAllocs(index)
}
