package client

import (
	"github.com/drover-project/drover/internal/client/allocrunner"
	"github.com/drover-project/drover/internal/structs"
)

// applyRestartRequest carries out a server's in-place restart request (a
// rolling restart, structs.AllocRestartRequest) once per new index: the
// named tasks are stopped and started again where they run, each
// recording a Restart Signaled event with the index, which is how the
// leader sees the restart happened.
func (c *Client) applyRestartRequest(ar *allocrunner.AllocRunner, a *structs.Allocation) {
	req := a.RestartRequest
	if req == nil || a.ServerTerminalStatus() || !ar.TakeRestartIndex(req.Index) {
		return
	}
	go func() {
		if err := ar.RestartTasks(req.Tasks, req.Reason, req.Index); err != nil {
			c.logger.Warn("in-place restart", "alloc_id", a.ID, "index", req.Index, "error", err)
		}
	}()
}
