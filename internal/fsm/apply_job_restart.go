package fsm

import (
	"github.com/drover-project/drover/internal/structs"
)

// applyJobRestart stores a rolling restart's step: its record, what it asks
// of allocations (an in-place restart request, or a migrate transition: the
// scheduler stops the allocation and places its replacement in one plan)
// and its evaluations. Allocations that are gone or already
// stopped by the server are skipped: the leader sees that on its next look.
func (f *FSM) applyJobRestart(buf []byte, index uint64) error {
	var req structs.JobRestartRequest
	if err := decode(buf, &req, "job restart"); err != nil {
		return err
	}
	if err := checkEvals(req.Evals); err != nil {
		return err
	}
	st := f.State()
	var writes []*structs.Allocation
	for _, w := range req.AllocWrites {
		if w == nil {
			continue
		}
		ex, err := st.AllocByID(nil, w.AllocID)
		if err != nil {
			return err
		}
		if ex == nil || ex.ServerTerminalStatus() {
			continue
		}
		c := *ex
		if req.Restart != nil {
			c.ModifyTime = req.Restart.ModifyTime
		}
		switch {
		case w.Replace:
			t := true
			c.DesiredTransition.Migrate = &t
		case w.Restart != nil:
			r := *w.Restart
			r.Tasks = append([]string(nil), w.Restart.Tasks...)
			c.RestartRequest = &r
		default:
			continue
		}
		writes = append(writes, &c)
	}
	if req.Restart != nil {
		if err := st.UpsertJobRestart(index, req.Restart); err != nil {
			return err
		}
	}
	if len(writes) > 0 {
		if err := st.UpsertAllocs(index, writes); err != nil {
			return err
		}
	}
	return f.upsertEvals(index, req.Evals)
}
