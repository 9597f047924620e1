package server

// A server that has just started holds only what its last Raft snapshot
// had: the log entries after it are applied once a leader is known and has
// told the server they are committed (or, alone, once it leads and its
// barrier has gone through). Until then its state store may lack nodes,
// jobs and allocations that exist, so even a stale read must not be served
// from it: a client told "node not found" registers again, a script told
// "no such job" acts on it. Such reads take the leader path instead
// (forward): served by the leader when one is known, "No cluster leader"
// (retryable) after RPCHoldTimeout when none is.

// stateReady reports whether this server's state store holds everything
// that was committed before it started, so that it may serve stale reads.
// It becomes true once and stays true: later staleness is what a stale read
// asks for (QueryMeta's LastContact and KnownLeader say how stale).
func (s *Server) stateReady() bool {
	if s.ready.Load() {
		return true
	}
	if s.IsLeader() { // set after the leader's barrier: everything is applied
		s.ready.Store(true)
		return true
	}
	// A follower: it has heard from a leader since it started (Raft records
	// the contact after taking the leader's commit index from the same
	// message), has handed every committed entry to the FSM, and has at
	// least everything its own log held at start. An uncommitted tail that
	// the leader truncates only delays readiness: until then stale reads are
	// forwarded to the leader, which is correct, just not local.
	if s.raft.LastContact().IsZero() {
		return false
	}
	applied := s.raft.AppliedIndex()
	if applied < s.raft.CommitIndex() || applied < s.startIndex {
		return false
	}
	s.ready.Store(true)
	return true
}
