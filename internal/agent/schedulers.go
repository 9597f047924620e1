package agent

import (
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/server"
)

// schedulerWorkers serves /v1/agent/schedulers[/config] from the agent's
// server (httpapi.SchedulerWorkers).
type schedulerWorkers struct{ srv *server.Server }

func (s schedulerWorkers) response(c server.SchedulerWorkerConfig) api.AgentSchedulerWorkerConfigResponse {
	return api.AgentSchedulerWorkerConfigResponse{ServerID: s.srv.ID(), NumSchedulers: c.NumSchedulers,
		EnabledSchedulers: c.EnabledSchedulers}
}

func (s schedulerWorkers) WorkerConfig() api.AgentSchedulerWorkerConfigResponse {
	return s.response(s.srv.SchedulerWorkerConfig())
}

func (s schedulerWorkers) SetWorkerConfig(num int, enabled []string) (api.AgentSchedulerWorkerConfigResponse, error) {
	c, err := s.srv.SetSchedulerWorkerConfig(server.SchedulerWorkerConfig{NumSchedulers: num, EnabledSchedulers: enabled})
	if err != nil {
		return api.AgentSchedulerWorkerConfigResponse{}, err
	}
	return s.response(c), nil
}

func (s schedulerWorkers) WorkersInfo() api.AgentSchedulerWorkersInfo {
	out := api.AgentSchedulerWorkersInfo{ServerID: s.srv.ID(), Schedulers: []api.AgentSchedulerWorkerInfo{}}
	for _, w := range s.srv.SchedulerWorkers() {
		out.Schedulers = append(out.Schedulers, api.AgentSchedulerWorkerInfo{ID: w.ID, EnabledSchedulers: w.EnabledSchedulers,
			Started: w.Started.UTC().Format(time.RFC3339Nano), Status: w.Status, WorkloadStatus: w.WorkloadStatus})
	}
	return out
}
