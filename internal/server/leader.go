package server

import (
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/structs"
)

// monitorLeadership follows Raft's leadership channel. hashicorp/raft's
// LeaderCh keeps only the latest value (override semantics), so Raft never
// blocks on us; we may take our time starting and stopping the leader loop.
func (s *Server) monitorLeadership() {
	var stopCh, doneCh chan struct{}
	stop := func() {
		if stopCh != nil {
			close(stopCh)
			<-doneCh
			stopCh, doneCh = nil, nil
		}
	}
	start := func() {
		stopCh, doneCh = make(chan struct{}), make(chan struct{})
		go func(stopCh, doneCh chan struct{}) {
			defer close(doneCh)
			s.leaderLoop(stopCh)
		}(stopCh, doneCh)
	}
	leaderCh := s.raft.LeaderCh()
	for {
		select {
		case isLeader := <-leaderCh:
			switch {
			case isLeader && stopCh == nil:
				start()
			case isLeader:
				// Lost and regained between two reads: entries may have been
				// applied that the old leader state never saw. Start over.
				stop()
				start()
			case stopCh != nil:
				stop()
			}
		case <-s.reassertCh:
			// A snapshot was restored: what the leader services hold came
			// from the replaced state. Start them again if still leading.
			if stopCh != nil {
				stop()
				if s.raft.State() == raft.Leader {
					start()
				}
			}
		case <-s.shutdownCh:
			stop()
			return
		}
	}
}

// leaderLoop runs while this server leads.
func (s *Server) leaderLoop(stopCh chan struct{}) {
	// The barrier makes the FSM current with everything earlier leaders
	// committed before we rebuild the in-memory services from it.
	for {
		if s.waitBarrier(stopCh) {
			break
		}
		select {
		case <-stopCh:
			return
		case <-time.After(time.Second):
		}
	}
	s.establishLeadership(stopCh)
	<-stopCh
	s.revokeLeadership()
	s.waitLeaderTasks()
}

// waitBarrier issues a Raft barrier and waits for it without ever blocking
// past stopCh.
func (s *Server) waitBarrier(stopCh chan struct{}) bool {
	defer metrics.MeasureSince(keyLeaderBarrier, time.Now())
	errCh := make(chan error, 1)
	go func() { errCh <- s.raft.Barrier(time.Minute).Error() }()
	select {
	case err := <-errCh:
		if err != nil {
			s.logger.Warn("raft barrier failed", "error", err)
			return false
		}
		return true
	case <-stopCh:
		return false
	}
}

// establishLeadership starts the leader-only services from current state.
func (s *Server) establishLeadership(stopCh chan struct{}) {
	defer metrics.MeasureSince(keyLeaderEstablish, time.Now())
	gen := s.leaderGen.Add(1)
	s.logger.Info("cluster leadership acquired")

	s.planQueue.SetEnabled(true)
	// The scheduler configuration first: the operator may have paused the
	// eval broker (PauseEvalBroker), which then stays off.
	if !s.ensureSchedulerConfig().PauseEvalBroker {
		s.brokerMu.Lock()
		s.broker.SetEnabled(true)
		s.blocked.SetEnabled(true)
		s.restoreEvals()
		s.brokerMu.Unlock()
	}
	s.heartbeats.SetEnabled(true)
	s.initializeHeartbeatTimers()
	// Rebuilt from state: every active deployment is watched again, so a
	// deployment resumes where the previous leader left it.
	s.deployWatcher.SetEnabled(true)
	s.restoreVarLocks()

	s.isLeader.Store(true)
	s.servicesUp.Store(1)
	s.establishCount.Add(1)

	// The loops that live as long as the leadership (leaderLoopTasks of
	// them), counted while they run so a test can tell that exactly one
	// set runs, on the leader.
	s.goLeader(func() { s.planApply(stopCh) })
	s.goLeader(func() { s.reapFailedEvals(stopCh) })
	s.goLeader(func() { s.reapCancelableAndDuplicates(stopCh) })
	s.goLeader(func() { s.periodicUnblockFailed(stopCh) })
	s.goLeader(func() { s.emitLeaderStats(stopCh) })
	s.goLeader(func() { s.watchSchedulerConfig(stopCh) })
	s.goLeader(func() { s.drainer.Run(stopCh) })
	s.goLeader(func() { s.runCoreGC(stopCh) })
	s.goLeader(func() { s.runJobRestarts(stopCh) })
	if s.gossip != nil {
		// Raft membership follows gossip (one more loop on such servers).
		s.goLeader(func() { s.serfReconcileLoop(stopCh) })
	}
	if s.replicatesACLs() {
		// Outside the authoritative region the global ACL objects are
		// mirrored from there (one more loop; acl_replication.go).
		s.goLeader(func() { s.replicateACLs(stopCh) })
	}
	// One-shot: each ends once its work is done. Autopilot runs in its own
	// goroutines; revokeLeadership stops it (autopilot.go).
	go s.initializeKeyring(stopCh, gen)
	go s.ensureClusterMetadata()
	go s.startAutopilot(stopCh)

	s.periodic.SetEnabled(true)
	go s.restorePeriodicDispatcher(stopCh, gen)
}

// leaderLoopTasks is how many goLeader loops a leadership starts on a
// server without gossip (one more with it, one more in a region that
// replicates ACLs from another).
const leaderLoopTasks = 9

// goLeader runs one of the leadership's loops, counted in leaderTasks and
// in the term's wait group (leaderLoop waits for them before the next term
// may start its own).
func (s *Server) goLeader(fn func()) {
	s.leaderTasks.Add(1)
	s.leaderWG.Add(1)
	go func() {
		defer s.leaderWG.Done()
		defer s.leaderTasks.Add(-1)
		fn()
	}()
}

// leaderTasksGrace bounds how long a lost leadership waits for its loops
// to end before the next one may start. Each loop ends on stopCh (a Raft
// write in flight ends with the leadership); past this, something is stuck:
// it is logged, and leadership handling goes on rather than stalling.
const leaderTasksGrace = 30 * time.Second

// waitLeaderTasks waits for the ended term's loops, so that two terms'
// loops (two drainers, two plan appliers) never run at once
// on one server.
func (s *Server) waitLeaderTasks() {
	done := make(chan struct{})
	go func() { s.leaderWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(leaderTasksGrace):
		s.logger.Error("leader loops still running after leadership was lost", "running", s.leaderTasks.Load(), "waited", leaderTasksGrace)
	}
}

// revokeLeadership tears every leader-only service down. Safe to call when
// not leading.
func (s *Server) revokeLeadership() {
	s.isLeader.Store(false)
	s.stopAutopilot()
	if !s.servicesUp.CompareAndSwap(1, 0) {
		return // not running (or another caller is tearing them down)
	}
	s.logger.Info("cluster leadership lost")
	s.periodic.SetEnabled(false)
	s.varLocks.setEnabled(false, nil)
	// Waits for the watcher's goroutines: a write of theirs in flight ends
	// with the leadership (Raft fails it) or the server's shutdown.
	s.deployWatcher.SetEnabled(false)
	s.heartbeats.SetEnabled(false)
	s.brokerMu.Lock()
	s.blocked.SetEnabled(false)
	s.broker.SetEnabled(false)
	s.brokerMu.Unlock()
	s.planQueue.SetEnabled(false)
}

// restoreEvals rebuilds broker and blocked evals from the state store.
func (s *Server) restoreEvals() {
	snap, err := s.State().Snapshot()
	if err != nil {
		s.logger.Error("restoring evals: snapshot failed", "error", err)
		return
	}
	iter, err := snap.Evals(nil)
	if err != nil {
		s.logger.Error("restoring evals failed", "error", err)
		return
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		e := raw.(*structs.Evaluation)
		switch {
		case e.ShouldEnqueue():
			s.broker.Enqueue(e)
		case e.ShouldBlock():
			s.blocked.Block(e)
		}
	}
}

// initializeHeartbeatTimers gives every live node the long failover TTL so
// a leader change does not mark the fleet down.
func (s *Server) initializeHeartbeatTimers() {
	snap, err := s.State().Snapshot()
	if err != nil {
		return
	}
	iter, err := snap.Nodes(nil)
	if err != nil {
		return
	}
	var ids []string
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		n := raw.(*structs.Node)
		if n.Status != structs.NodeStatusDown {
			ids = append(ids, n.ID)
		}
	}
	s.heartbeats.ResetFailover(ids)
}

// reapFailedEvals marks evals that hit the delivery limit failed and
// schedules a follow-up.
func (s *Server) reapFailedEvals(stopCh chan struct{}) {
	for {
		e, token, err := s.broker.DequeueFailed(time.Second)
		select {
		case <-stopCh:
			return
		default:
		}
		if err != nil || e == nil {
			continue
		}
		upd := e.Copy()
		upd.Status = structs.EvalStatusFailed
		upd.StatusDescription = "evaluation reached delivery limit (" + itoa(s.config.EvalDeliveryLimit) + ")"
		now := time.Now()
		upd.ModifyTime = now.UnixNano()
		evals := []*structs.Evaluation{upd}
		if e.Type != structs.JobTypeCore {
			follow := &structs.Evaluation{
				ID: newID(), Namespace: e.Namespace, Priority: e.Priority, Type: e.Type,
				TriggeredBy: structs.EvalTriggerFailedFollowUp, JobID: e.JobID,
				JobModifyIndex: e.JobModifyIndex, Status: structs.EvalStatusPending,
				Wait: time.Minute + time.Duration(rnd(int64(5*time.Minute))), PreviousEval: e.ID,
				CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
			}
			upd.NextEval = follow.ID
			evals = append(evals, follow)
		}
		if _, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals}); err != nil {
			s.logger.Error("failed to mark eval failed", "eval_id", e.ID, "error", err)
			continue
		}
		s.broker.Ack(e.ID, token)
	}
}

// reapCancelableAndDuplicates cancels evals made obsolete by newer ones.
func (s *Server) reapCancelableAndDuplicates(stopCh chan struct{}) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-stopCh:
			return
		case <-t.C:
		}
		var cancel []*structs.Evaluation
		cancel = append(cancel, s.broker.Cancelable(728)...)
		cancel = append(cancel, s.blocked.Duplicates()...)
		if len(cancel) == 0 {
			continue
		}
		now := time.Now().UnixNano()
		upd := make([]*structs.Evaluation, 0, len(cancel))
		for _, e := range cancel {
			c := e.Copy()
			c.Status = structs.EvalStatusCancelled
			c.StatusDescription = "canceled after more recent eval was processed"
			c.ModifyTime = now
			upd = append(upd, c)
		}
		if _, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: upd}); err != nil {
			s.logger.Warn("failed to cancel obsolete evals", "error", err)
		}
	}
}

// periodicUnblockFailed re-enqueues evals blocked by plan conflicts.
func (s *Server) periodicUnblockFailed(stopCh chan struct{}) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-stopCh:
			return
		case <-t.C:
			s.blocked.UnblockFailed()
		}
	}
}
