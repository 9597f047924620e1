package fsm

import "github.com/drover-project/drover/internal/structs"

// applySchedulerConfig stores the scheduler configuration. It returns
// whether the write happened (a CAS write that found another index does
// not), which the proposer reports as Updated.
func (f *FSM) applySchedulerConfig(buf []byte, index uint64) any {
	var req structs.SchedulerSetConfigRequest
	if err := decode(buf, &req, "scheduler config"); err != nil {
		return err
	}
	ok, err := f.State().SetSchedulerConfig(index, &req.Config, req.CAS)
	if err != nil {
		return err
	}
	return ok
}
