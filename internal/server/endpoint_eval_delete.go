package server

import (
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// maxEvalDeleteIDs bounds the IDs of one delete request (Nomad's limit: a
// Raft entry of that many IDs stays well under the entry size it allows).
const maxEvalDeleteIDs = 7281

// Delete removes evaluations, by ID or by filter, while the operator has
// paused the eval broker (PauseEvalBroker): the way out of a flood of
// evaluations that should never run. An evaluation some live allocation
// still depends on (running, pending, unknown, or failed and perhaps to be
// rescheduled, of a job that is still live) is not deleted: by ID that is
// an error, by filter it is skipped.
func (e *Eval) Delete(args *structs.EvalOperatorDeleteRequest, reply *structs.EvalOperatorDeleteResponse) error {
	if done, err := e.srv.forward("Eval.Delete", args.Region, false, args, reply); done {
		return err
	}
	if err := e.srv.authorizeManagement(args.AuthToken); err != nil {
		return err
	}
	if e.srv.broker.Enabled() {
		return structs.NewErrCoded(400, "eval broker is enabled; eval broker must be paused to delete evals (operator scheduler set-config -pause-eval-broker=true)")
	}
	if (len(args.EvalIDs) == 0) == (args.Filter == "") {
		return structs.NewErrCoded(400, "evals must be deleted by either ID (EvalIDs) or filter (Filter), not both")
	}
	if len(args.EvalIDs) > maxEvalDeleteIDs {
		return structs.NewErrCoded(400, "request includes %d eval IDs, must be %d or fewer", len(args.EvalIDs), maxEvalDeleteIDs)
	}
	snap, err := e.srv.State().Snapshot()
	if err != nil {
		return err
	}
	var ids []string
	if args.Filter == "" {
		for _, id := range args.EvalIDs {
			ev, err := snap.EvalByID(nil, id)
			if err != nil {
				return err
			}
			if ev == nil {
				return structs.NewErrCoded(404, "eval not found: %s", id)
			}
			if why, err := evalDeleteUnsafe(snap, ev); err != nil {
				return err
			} else if why != "" {
				return structs.NewErrCoded(400, "eval %s is not safe to delete: %s", id, why)
			}
			ids = append(ids, id)
		}
	} else {
		filter, err := compileFilter(args.Filter)
		if err != nil {
			return err
		}
		iter, err := snap.Evals(nil)
		if err != nil {
			return err
		}
		for raw := iter.Next(); raw != nil && len(ids) < maxEvalDeleteIDs; raw = iter.Next() {
			ev := raw.(*structs.Evaluation)
			if ok, err := filter.match(ev); err != nil {
				return err
			} else if !ok {
				continue
			}
			if why, err := evalDeleteUnsafe(snap, ev); err != nil {
				return err
			} else if why == "" {
				ids = append(ids, ev.ID)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, index, err := e.srv.raftApply(structs.EvalDeleteRequestType, &structs.EvalDeleteRequest{Evals: ids})
	if err != nil {
		return err
	}
	reply.Count, reply.Index = len(ids), index
	return nil
}

// evalDeleteUnsafe says why ev must be kept ("" when it may go): one of
// its allocations of a live job is not finished, or failed and may be
// rescheduled from it.
func evalDeleteUnsafe(snap *state.StateSnapshot, ev *structs.Evaluation) (string, error) {
	job, err := snap.JobByID(nil, ev.Namespace, ev.JobID)
	if err != nil {
		return "", err
	}
	if job == nil || job.Stop || job.Status == structs.JobStatusDead {
		return "", nil
	}
	allocs, err := snap.AllocsByEval(nil, ev.ID)
	if err != nil {
		return "", err
	}
	for _, a := range allocs {
		switch a.ClientStatus {
		case structs.AllocClientStatusComplete, structs.AllocClientStatusLost:
			continue
		case structs.AllocClientStatusFailed:
			return "allocation " + a.ID + " failed and may be rescheduled", nil
		}
		if a.DesiredStatus != structs.AllocDesiredStatusRun && a.ClientStatus != structs.AllocClientStatusRunning {
			continue
		}
		return "allocation " + a.ID + " is " + a.ClientStatus, nil
	}
	return "", nil
}
