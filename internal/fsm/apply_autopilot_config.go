package fsm

import "github.com/drover-project/drover/internal/structs"

// applyAutopilotConfig stores the autopilot configuration. It returns
// whether the write happened (a CAS write that found another index does
// not).
func (f *FSM) applyAutopilotConfig(buf []byte, index uint64) any {
	var req structs.AutopilotSetConfigRequest
	if err := decode(buf, &req, "autopilot config"); err != nil {
		return err
	}
	ok, err := f.State().SetAutopilotConfig(index, &req.Config, req.CAS)
	if err != nil {
		return err
	}
	return ok
}
