package server

import (
	"time"

	"github.com/drover-project/drover/internal/acl"
	"github.com/drover-project/drover/internal/server/periodic"
	"github.com/drover-project/drover/internal/state"
	"github.com/drover-project/drover/internal/structs"
)

// newPeriodicDispatcher wires the leader-only periodic dispatcher to this
// server's Raft and state.
func (s *Server) newPeriodicDispatcher() *periodic.Dispatcher {
	return periodic.New(periodic.Config{
		Clock: s.config.PeriodicClock,
		Launch: func(job *structs.Job, t time.Time) error {
			_, _, err := s.launchPeriodicChild(job, t)
			return err
		},
		ChildRunning: func(job *structs.Job) (bool, error) {
			return periodicChildRunning(s.State(), job)
		},
		Logger: s.logger.Named("periodic"),
	})
}

// periodicChildRunning reports whether a periodic parent has a child that
// is not dead (what prohibit_overlap waits for).
func periodicChildRunning(st *state.StateStore, parent *structs.Job) (bool, error) {
	iter, err := st.JobsByIDPrefix(nil, parent.Namespace, parent.ID+"/periodic-")
	if err != nil {
		return false, err
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		child := raw.(*structs.Job)
		if child.ParentID == parent.ID && child.Status != structs.JobStatusDead {
			return true, nil
		}
	}
	return false, nil
}

// launchPeriodicChild registers the child of parent for launch time t with
// its evaluation, in one Raft entry. The parent is re-read so a launch never
// uses a stale spec; a parent gone, stopped or no longer periodic is skipped.
func (s *Server) launchPeriodicChild(parent *structs.Job, t time.Time) (*structs.Evaluation, uint64, error) {
	cur, err := s.State().JobByID(nil, parent.Namespace, parent.ID)
	if err != nil {
		return nil, 0, err
	}
	if cur == nil || cur.Stop || !cur.IsPeriodic() {
		return nil, 0, structs.NewErrCoded(400, "job %q is not a running periodic job", parent.ID)
	}
	child := structs.DerivePeriodicChild(cur, t)
	now := time.Now()
	child.SubmitTime = now.UnixNano()
	eval := &structs.Evaluation{
		ID: newID(), Namespace: child.Namespace, Priority: child.Priority, Type: child.Type,
		TriggeredBy: structs.EvalTriggerPeriodicJob, JobID: child.ID,
		Status: structs.EvalStatusPending, CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
	}
	req := &structs.JobRegisterRequest{Job: child, Eval: eval,
		WriteRequest: structs.WriteRequest{Namespace: child.Namespace, Region: child.Region}}
	_, idx, err := s.raftApply(structs.JobRegisterRequestType, req)
	if err != nil {
		return nil, 0, err
	}
	s.logger.Info("launched periodic job", "parent", parent.ID, "child", child.ID, "eval_id", eval.ID)
	return eval, idx, nil
}

// restorePeriodicDispatcher tracks every periodic parent in state and
// launches, once, any launch missed while no leader ran. It runs in the
// background after leadership is established; gen guards against a newer
// leadership term.
func (s *Server) restorePeriodicDispatcher(stopCh chan struct{}, gen uint64) {
	snap, err := s.State().Snapshot()
	if err != nil {
		s.logger.Error("restoring periodic dispatcher: snapshot failed", "error", err)
		return
	}
	iter, err := snap.Jobs(nil)
	if err != nil {
		s.logger.Error("restoring periodic dispatcher failed", "error", err)
		return
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		select {
		case <-stopCh:
			return
		default:
		}
		if s.leaderGen.Load() != gen {
			return
		}
		job := raw.(*structs.Job)
		if !job.IsPeriodic() || job.Stop || job.ParentID != "" {
			continue
		}
		var last time.Time
		if l, err := snap.PeriodicLaunchByID(nil, job.Namespace, job.ID); err == nil && l != nil {
			last = l.Launch
		}
		if _, err := s.periodic.Restore(job, last); err != nil {
			s.logger.Error("periodic catch-up launch failed", "job", job.ID, "error", err)
		}
	}
}

// Periodic is the RPC endpoint for periodic jobs.
type Periodic struct{ srv *Server }

// Force launches a periodic parent's child now, whatever its schedule and
// prohibit_overlap say.
func (p *Periodic) Force(args *structs.PeriodicForceRequest, reply *structs.PeriodicForceResponse) error {
	if done, err := p.srv.forward("Periodic.Force", args.Region, false, args, reply); done {
		return err
	}
	if err := p.srv.authorize(args.AuthToken, func(a *acl.ACL) bool {
		return a.AllowNamespaceAnyOperation(namespaceOf(args.Namespace), acl.NamespaceCapabilityDispatchJob, acl.NamespaceCapabilitySubmitJob)
	}); err != nil {
		return err
	}
	if args.JobID == "" {
		return structs.NewErrCoded(400, "missing job ID for forcing a periodic launch")
	}
	ns := namespaceOf(args.Namespace)
	job, err := p.srv.State().JobByID(nil, ns, args.JobID)
	if err != nil {
		return err
	}
	if job == nil {
		return structs.NewErrCoded(404, "job not found")
	}
	if !job.IsPeriodic() {
		return structs.NewErrCoded(400, "can't force launch non-periodic job")
	}
	if job.Stop {
		return structs.NewErrCoded(400, "can't force launch a stopped periodic job")
	}
	eval, idx, err := p.srv.launchPeriodicChild(job, time.Now())
	if err != nil {
		return err
	}
	reply.EvalID, reply.EvalCreateIndex, reply.Index = eval.ID, idx, idx
	return nil
}
