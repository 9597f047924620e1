package server

import "github.com/drover-project/drover/internal/structs"

// leaderSink receives the FSM's notifications on every server. The broker and
// blocked evals ignore them unless this server leads. Nothing here blocks:
// both components only take a short lock.
type leaderSink struct{ s *Server }

func (k *leaderSink) EvalsUpserted(evals []*structs.Evaluation) {
	for _, e := range evals {
		switch {
		case e.ShouldEnqueue():
			k.s.broker.Enqueue(e)
		case e.ShouldBlock():
			k.s.blocked.Block(e)
		case e.Status == structs.EvalStatusComplete && len(e.FailedTGAllocs) == 0:
			k.s.blocked.Untrack(e.Namespace, e.JobID)
		}
	}
}

func (k *leaderSink) CapacityChanged(computedClass, nodeID string, index uint64) {
	k.s.blocked.Unblock(computedClass, index)
}

// JobUpserted tracks periodic parents (and forgets stopped ones) in the
// periodic dispatcher; it ignores the call unless this server leads.
func (k *leaderSink) JobUpserted(job *structs.Job) {
	k.s.periodic.Add(job)
}

// JobDeleted forgets a purged job in the periodic dispatcher.
func (k *leaderSink) JobDeleted(namespace, id string) {
	k.s.periodic.Remove(namespace, id)
}
