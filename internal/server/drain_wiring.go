package server

import "github.com/drover-project/drover/internal/structs"

// drainRaft is the drainer's write path: its entries go through Raft like
// any other server write.
type drainRaft struct{ s *Server }

func (r drainRaft) SetDesiredTransitions(req *structs.AllocUpdateDesiredTransitionRequest) error {
	_, _, err := r.s.raftApply(structs.AllocUpdateDesiredTransitionRequestType, req)
	return err
}

func (r drainRaft) CompleteDrains(req *structs.BatchNodeUpdateDrainRequest) error {
	_, _, err := r.s.raftApply(structs.BatchNodeUpdateDrainRequestType, req)
	return err
}

// kickDrainer asks the drainer for a pass now; a follower's drainer is not
// running and the kick waits, harmlessly, for the next leadership.
func (s *Server) kickDrainer() { s.drainer.Kick() }
