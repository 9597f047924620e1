package server

import (
	"sort"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// Eval is the RPC endpoint for evaluations, including the broker calls the
// scheduler workers make.
type Eval struct{ srv *Server }

// GetEval returns one evaluation.
func (e *Eval) GetEval(args *structs.EvalSpecificRequest, reply *structs.SingleEvalResponse) error {
	if done, err := e.srv.forward("Eval.GetEval", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	return e.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		ev, err := st.EvalByID(ws, args.EvalID)
		if err != nil {
			return err
		}
		if ev != nil && args.IncludeRelated {
			related, err := relatedEvals(ws, st, ev)
			if err != nil {
				return err
			}
			c := ev.Copy()
			c.RelatedEvals = related
			ev = c
		}
		reply.Eval = ev
		if ev != nil {
			reply.Index = ev.ModifyIndex
		} else {
			reply.Index = maxIndex(st, "evals")
		}
		return nil
	})
}

// List returns evaluations, optionally filtered by job and status.
func (e *Eval) List(args *structs.EvalListRequest, reply *structs.EvalListResponse) error {
	if done, err := e.srv.forward("Eval.List", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	ns := namespaceOf(args.Namespace)
	if args.Filter != "" && (args.FilterJobID != "" || args.FilterEvalStatus != "") {
		return errIncompatibleFilter
	}
	filter, err := compileFilter(args.Filter)
	if err != nil {
		return err
	}
	readable, err := e.srv.listNamespaces(&args.QueryOptions)
	if err != nil {
		return err
	}
	return e.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		iter, err := st.EvalsByIDPrefix(ws, ns, args.Prefix)
		if err != nil {
			return err
		}
		out := []*structs.Evaluation{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			ev := raw.(*structs.Evaluation)
			if args.FilterJobID != "" && ev.JobID != args.FilterJobID {
				continue
			}
			if args.FilterEvalStatus != "" && ev.Status != args.FilterEvalStatus {
				continue
			}
			out = append(out, ev)
		}
		sort.SliceStable(out, func(a, b int) bool { return out[a].CreateIndex > out[b].CreateIndex })
		out = onlyReadable(out, readable, func(e *structs.Evaluation) string { return e.Namespace })
		reply.Evaluations, reply.NextToken, err = paginate(out, &args.QueryOptions, func(e *structs.Evaluation) string { return e.ID }, keep[*structs.Evaluation](filter))
		if err != nil {
			return err
		}
		reply.Index = maxIndex(st, "evals")
		return nil
	})
}

// Allocations lists the allocations an evaluation placed.
func (e *Eval) Allocations(args *structs.EvalSpecificRequest, reply *structs.EvalAllocationsResponse) error {
	if done, err := e.srv.forward("Eval.Allocations", args.Region, args.AllowStale, args, reply); done {
		return err
	}
	return e.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateSnapshot) error {
		allocs, err := st.AllocsByEval(ws, args.EvalID)
		if err != nil {
			return err
		}
		out := make([]*structs.AllocListStub, 0, len(allocs))
		for _, a := range allocs {
			out = append(out, a.Stub())
		}
		reply.Allocations = out
		reply.Index = maxIndex(st, "allocs")
		return nil
	})
}

// Dequeue hands a worker an evaluation (leader only).
func (e *Eval) Dequeue(args *structs.EvalDequeueRequest, reply *structs.EvalDequeueResponse) error {
	if done, err := e.srv.forward("Eval.Dequeue", args.Region, false, args, reply); done {
		return err
	}
	timeout := args.Timeout
	if timeout <= 0 || timeout > time.Minute {
		timeout = 500 * time.Millisecond
	}
	ev, token, err := e.srv.broker.Dequeue(args.Schedulers, timeout)
	if err != nil {
		return err
	}
	if ev == nil {
		return nil
	}
	reply.Eval, reply.Token = ev, token
	// The worker must see every write for this job the eval may depend on.
	wait := ev.ModifyIndex
	if evals, err := e.srv.State().EvalsByJob(nil, ev.Namespace, ev.JobID); err == nil {
		for _, o := range evals {
			if o.ModifyIndex > wait {
				wait = o.ModifyIndex
			}
		}
	}
	reply.WaitIndex = wait
	reply.Index = wait
	return nil
}

// Ack acknowledges a processed evaluation.
func (e *Eval) Ack(args *structs.EvalAckRequest, reply *structs.GenericResponse) error {
	if done, err := e.srv.forward("Eval.Ack", args.Region, false, args, reply); done {
		return err
	}
	return e.srv.broker.Ack(args.EvalID, args.Token)
}

// Nack returns an evaluation to the broker for redelivery.
func (e *Eval) Nack(args *structs.EvalAckRequest, reply *structs.GenericResponse) error {
	if done, err := e.srv.forward("Eval.Nack", args.Region, false, args, reply); done {
		return err
	}
	return e.srv.broker.Nack(args.EvalID, args.Token)
}

func (e *Eval) checkToken(evals []*structs.Evaluation, token string) error {
	if len(evals) != 1 {
		return structs.NewErrCoded(400, "only a single eval can be updated")
	}
	tok, ok := e.srv.broker.Outstanding(evals[0].ID)
	if !ok {
		return structs.NewErrCoded(400, "evaluation is not outstanding")
	}
	if tok != token {
		return structs.NewErrCoded(400, "evaluation token does not match")
	}
	return nil
}

// Update writes a worker's evaluation update (token checked).
func (e *Eval) Update(args *structs.EvalUpdateRequest, reply *structs.GenericResponse) error {
	if done, err := e.srv.forward("Eval.Update", args.Region, false, args, reply); done {
		return err
	}
	if err := e.checkToken(args.Evals, args.EvalToken); err != nil {
		return err
	}
	// Written together with the other workers' updates of the moment; the
	// reply (and so the worker's ack) still waits for the commit.
	idx, err := e.srv.evalUpdates.Apply(args.Evals)
	reply.Index = idx
	return err
}

// Create writes a new evaluation a worker made (blocked or follow-up).
func (e *Eval) Create(args *structs.EvalUpdateRequest, reply *structs.GenericResponse) error {
	if done, err := e.srv.forward("Eval.Create", args.Region, false, args, reply); done {
		return err
	}
	if len(args.Evals) != 1 {
		return structs.NewErrCoded(400, "only a single eval can be created")
	}
	ev := args.Evals[0]
	if prev, ok := e.srv.broker.Outstanding(ev.PreviousEval); !ok || prev != args.EvalToken {
		return structs.NewErrCoded(400, "previous evaluation is not outstanding with this token")
	}
	if existing, err := e.srv.State().EvalByID(nil, ev.ID); err != nil {
		return err
	} else if existing != nil {
		return structs.NewErrCoded(400, "evaluation already exists")
	}
	idx, err := e.srv.evalUpdates.Apply(args.Evals)
	reply.Index = idx
	return err
}

// Reblock puts a still-unplaceable blocked evaluation back.
func (e *Eval) Reblock(args *structs.EvalUpdateRequest, reply *structs.GenericResponse) error {
	if done, err := e.srv.forward("Eval.Reblock", args.Region, false, args, reply); done {
		return err
	}
	if err := e.checkToken(args.Evals, args.EvalToken); err != nil {
		return err
	}
	ev := args.Evals[0]
	if ev.Status != structs.EvalStatusBlocked {
		return structs.NewErrCoded(400, "eval is not blocked")
	}
	if err := e.srv.broker.OutstandingReset(ev.ID, args.EvalToken); err != nil {
		return err
	}
	// Track it with its token before the write: the FSM reports the same
	// eval without a token, and a release in between must still reach the
	// broker as a requeue of this delivery.
	e.srv.blocked.Reblock(ev, args.EvalToken)
	_, idx, err := e.srv.raftApply(structs.EvalUpdateRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = idx
	return nil
}

// relatedEvals follows NextEval, PreviousEval and BlockedEval links from ev in
// both directions and returns stubs of every eval reached.
func relatedEvals(ws memdb.WatchSet, st *state.StateSnapshot, ev *structs.Evaluation) ([]*structs.EvaluationStub, error) {
	seen := map[string]bool{ev.ID: true}
	queue := []*structs.Evaluation{ev}
	out := []*structs.EvaluationStub{}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, id := range []string{cur.NextEval, cur.PreviousEval, cur.BlockedEval} {
			if id == "" || seen[id] {
				continue
			}
			seen[id] = true
			other, err := st.EvalByID(ws, id)
			if err != nil {
				return nil, err
			}
			if other == nil {
				continue
			}
			queue = append(queue, other)
			out = append(out, &structs.EvaluationStub{ID: other.ID, Namespace: other.Namespace, Priority: other.Priority,
				Type: other.Type, TriggeredBy: other.TriggeredBy, JobID: other.JobID, NodeID: other.NodeID,
				DeploymentID: other.DeploymentID, Status: other.Status, StatusDescription: other.StatusDescription,
				WaitUntil: other.WaitUntil, NextEval: other.NextEval, PreviousEval: other.PreviousEval,
				BlockedEval: other.BlockedEval, CreateIndex: other.CreateIndex, ModifyIndex: other.ModifyIndex,
				CreateTime: other.CreateTime, ModifyTime: other.ModifyTime})
		}
	}
	return out, nil
}
