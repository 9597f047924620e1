package server

import (
	"github.com/drover-project/drover/internal/server/deploywatch"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// newDeploymentWatcher builds the leader-only deployment watcher; it writes
// through this server's Raft.
func (s *Server) newDeploymentWatcher() *deploywatch.Watcher {
	return deploywatch.New(deploywatch.Config{
		State:     func() *state.StateStore { return s.State() },
		Applier:   deployApplier{s},
		Logger:    s.logger.Named("deployment_watcher"),
		QueryRate: s.config.DeploymentQueryRateLimit,
	})
}

// deployApplier writes the deployment watcher's changes as Raft entries.
type deployApplier struct{ s *Server }

func (a deployApplier) UpdateDeploymentStatus(req *structs.DeploymentStatusUpdateRequest) (uint64, error) {
	_, idx, err := a.s.raftApply(structs.DeploymentStatusUpdateRequestType, req)
	return idx, err
}

func (a deployApplier) PromoteDeployment(req *structs.ApplyDeploymentPromoteRequest) (uint64, error) {
	_, idx, err := a.s.raftApply(structs.DeploymentPromoteRequestType, req)
	return idx, err
}

func (a deployApplier) UpdateAllocDesiredTransition(req *structs.AllocUpdateDesiredTransitionRequest) (uint64, error) {
	_, idx, err := a.s.raftApply(structs.AllocUpdateDesiredTransitionRequestType, req)
	return idx, err
}

func (a deployApplier) UpsertEvals(evals []*structs.Evaluation) (uint64, error) {
	return a.s.evalUpdates.Apply(evals)
}
