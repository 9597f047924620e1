package client

import (
	"github.com/drover-project/drover/internal/client/allocdir"
	"github.com/drover-project/drover/internal/client/allocrunner"
	"github.com/drover-project/drover/internal/client/logs"
	"github.com/drover-project/drover/internal/client/taskenv"
	"github.com/drover-project/drover/internal/client/taskrunner"
	"github.com/drover-project/drover/internal/structs"
	"net/http"
	"sync/atomic"
)

// The allocation directory, log collection and task environment packages
// are wired into the runners here.

func newAllocDir(allocRoot, allocID string) allocrunner.AllocDir {
	return allocdir.New(allocRoot, allocID)
}

func startLogs(logDir, task string, maxFiles, maxSizeMB int) (taskrunner.LogCollector, error) {
	c, err := logs.StartCollector(logDir, task, maxFiles, maxSizeMB)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func taskenvInput(in taskrunner.EnvInput) taskenv.Input {
	return taskenv.Input{Alloc: in.Alloc, Task: in.Task, Node: in.Node, Region: in.Region, AllocDir: in.AllocDir, TaskDir: in.TaskDir}
}

func buildEnv(in taskrunner.EnvInput) map[string]string {
	return taskenv.Build(taskenvInput(in))
}

// interpolateConfig interpolates ${...} in a driver config against the
// task's final environment env (template and identity variables included)
// and the node.
func interpolateConfig(cfg map[string]any, in taskrunner.EnvInput, env map[string]string) map[string]any {
	return taskenv.New(taskenvInput(in)).With(env).InterpolateConfig(cfg)
}

// reserveDevices hands a task's granted devices to the device plugins.
func (c *Client) reserveDevices(granted []*structs.AllocatedDeviceResource) (map[string]string, error) {
	r, err := c.cfg.Devices.Reserve(granted)
	if err != nil {
		return nil, err
	}
	return r.Envs, nil
}

// signIdentities asks the servers for an allocation's workload identities,
// authenticated as this node.
func (c *Client) signIdentities(allocID string) ([]*structs.SignedWorkloadIdentity, error) {
	req := &structs.AllocIdentitiesRequest{AllocID: allocID,
		QueryOptions: structs.QueryOptions{Region: c.cfg.Region, AuthToken: c.secretID()}}
	var resp structs.AllocIdentitiesResponse
	if err := c.cfg.RPC.RPC("Alloc.SignIdentities", req, &resp); err != nil {
		return nil, err
	}
	return resp.Identities, nil
}

// taskAPIHandler is the agent's HTTP API as the Task API serves it; the
// agent sets it once its HTTP handler exists (until then, 503).
type taskAPIHandler struct{ h atomic.Pointer[http.Handler] }

func (t *taskAPIHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := t.h.Load()
	if h == nil {
		http.Error(w, "the agent's HTTP API is not up yet", http.StatusServiceUnavailable)
		return
	}
	(*h).ServeHTTP(w, r)
}

// SetTaskAPI sets the handler tasks reach on secrets/api.sock.
func (c *Client) SetTaskAPI(h http.Handler) { c.taskAPI.h.Store(&h) }
