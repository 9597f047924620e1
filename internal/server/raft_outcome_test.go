package server

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/client/servers"
	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/structs"
)

// What Raft's answer to an Apply means for the writer: before the append
// (not the leader, the apply queue full) the write never reached the log
// and ErrNoLeader lets callers send it again; after it (leadership lost,
// overtaken by a restore, the server shutting down) the outcome is unknown.
func TestApplyErrorTellsNeverAppendedFromUnknown(t *testing.T) {
	for _, tc := range []struct {
		raft      error
		retryable bool
		text      string
	}{
		{raft.ErrNotLeader, true, "No cluster leader"},
		{raft.ErrEnqueueTimeout, true, "No cluster leader"},
		{raft.ErrLeadershipLost, false, "leadership lost while committing log"},
		{raft.ErrAbortedByRestore, false, "snapshot restored while committing log"},
		{raft.ErrRaftShutdown, false, "shut down while committing log"},
	} {
		got := applyError(tc.raft)
		if structs.IsNoLeader(got) != tc.retryable || structs.IsOutcomeUnknown(got) == tc.retryable {
			t.Errorf("%v -> %q: retryable %v, outcome unknown %v; want retryable %v", tc.raft, got, structs.IsNoLeader(got), structs.IsOutcomeUnknown(got), tc.retryable)
		}
		if !strings.Contains(got.Error(), tc.text) {
			t.Errorf("%v -> %q, want it to say %q", tc.raft, got, tc.text)
		}
		// The answer keeps its meaning after crossing an RPC connection.
		wire := errors.New(got.Error())
		if structs.IsNoLeader(wire) != tc.retryable || structs.IsOutcomeUnknown(wire) == tc.retryable {
			t.Errorf("%v as a string: misread", tc.raft)
		}
	}
}

// A job registration whose leader loses its leadership after appending the
// entry (injected: the entry commits, the writer is told
// raft.ErrLeadershipLost) is answered "leadership lost while committing
// log", not "No cluster leader": through a follower, and through a client
// agent's server manager, which used to send it again to the next server
// and so registered the job twice (two evaluations for one submission).
func TestLeadershipLostAfterAppendIsNotRetried(t *testing.T) {
	var armed atomic.Bool
	var injected atomic.Int64
	servers3 := testClusterWith(t, 3, func(i int, cfg *Config) {
		cfg.RPCHoldTimeout = 2 * time.Second
		cfg.applyErrHook = func(mt structs.MessageType, err error) error {
			if err == nil && (mt == structs.JobRegisterRequestType || mt == structs.JobRegisterBatchRequestType) && armed.CompareAndSwap(true, false) {
				injected.Add(1)
				return raft.ErrLeadershipLost
			}
			return err
		}
	})
	leader := waitLeader(t, servers3, 20*time.Second, "a leader")
	var fol *Server
	for _, s := range servers3 {
		if s != leader {
			fol = s
			break
		}
	}
	evalsOf := func(id string) int {
		t.Helper()
		evals, err := leader.State().EvalsByJob(nil, "default", id)
		if err != nil {
			t.Fatal(err)
		}
		// Only registrations count: the scheduler's pass may already
		// have added a blocked evaluation (there are no nodes).
		n := 0
		for _, e := range evals {
			if e.TriggeredBy == structs.EvalTriggerJobRegister {
				n++
			}
		}
		return n
	}

	// Through a follower, which forwards to the leader.
	armed.Store(true)
	var rr structs.JobRegisterResponse
	err := fol.RPC("Job.Register", &structs.JobRegisterRequest{Job: testJob("lost-via-follower", 1)}, &rr)
	if err == nil || structs.IsNoLeader(err) || !structs.IsOutcomeUnknown(err) || !strings.Contains(err.Error(), "leadership lost while committing log") {
		t.Fatalf("registration whose leadership was lost after the append: %v; want %q", err, structs.ErrLeadershipLost)
	}
	if injected.Load() != 1 {
		t.Fatalf("injected %d leadership losses, want 1", injected.Load())
	}
	// It was committed: the job is there, once.
	if !jobExists(t, leader, "lost-via-follower") || evalsOf("lost-via-follower") != 1 {
		t.Fatalf("job present %v with %d evaluations; want present with 1", jobExists(t, leader, "lost-via-follower"), evalsOf("lost-via-follower"))
	}

	// Through a client agent's server manager over the network, starting
	// with a follower (the leader would answer the same).
	pool := droverrpc.NewPool(time.Second)
	t.Cleanup(pool.Shutdown)
	var addrs []string
	for _, s := range servers3 {
		addrs = append(addrs, s.RPCAddr())
	}
	m := servers.New(servers.Config{Servers: addrs, Call: pool.Call, IsServerError: droverrpc.IsServerError, IsNotSent: droverrpc.IsConnectError})
	armed.Store(true)
	err = m.Call("Job.Register", &structs.JobRegisterRequest{Job: testJob("lost-via-client", 1)}, &rr)
	if err == nil || !strings.Contains(err.Error(), "leadership lost while committing log") {
		t.Fatalf("registration through the client's server manager: %v; want %q", err, structs.ErrLeadershipLost)
	}
	if n := evalsOf("lost-via-client"); n != 1 {
		t.Fatalf("one registration made %d evaluations: it was sent again after its leadership was lost", n)
	}
	vs, err := leader.State().JobVersionsByID(nil, "default", "lost-via-client")
	if err != nil || len(vs) != 1 {
		t.Fatalf("job versions: %d, %v; want 1", len(vs), err)
	}

	// Writes go on once nothing is injected.
	register(t, fol, testJob("after", 0))
}

// The writes a client agent sends again after any failure, including one
// whose outcome is unknown, are upserts by ID: applied twice they leave
// what applying them once does (one allocation with the client's state,
// one evaluation), so for them a retry is safe where a job registration's
// is not.
func TestIdempotentWritesApplyTwiceHarmlessly(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 8192)
	reg := register(t, s, testJob("web", 1))
	evalDone(t, s, reg.EvalID)
	allocs := liveAllocs(t, s, "web")
	if len(allocs) != 1 {
		t.Fatalf("%d allocations, want 1", len(allocs))
	}
	update := allocs[0].CopySkipJob()
	update.ClientStatus = structs.AllocClientStatusRunning
	ev, err := s.State().EvalByID(nil, reg.EvalID)
	if err != nil || ev == nil {
		t.Fatalf("eval %s: %v", reg.EvalID, err)
	}
	for i := 0; i < 2; i++ {
		if _, _, err := s.raftApply(structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{update}, UpdatedAt: time.Now().UnixNano()}); err != nil {
			t.Fatalf("client update %d: %v", i, err)
		}
		if _, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{ev.Copy()}}); err != nil {
			t.Fatalf("eval update %d: %v", i, err)
		}
	}
	after := allocsOf(t, s, "web")
	if len(after) != 1 || after[0].ClientStatus != structs.AllocClientStatusRunning || after[0].DesiredStatus != allocs[0].DesiredStatus {
		t.Fatalf("after the update applied twice: %d allocations, first %+v", len(after), after[0])
	}
	evals, err := s.State().EvalsByJob(nil, "default", "web")
	if err != nil || len(evals) != 1 {
		t.Fatalf("after the eval update applied twice: %d evaluations (%v), want 1", len(evals), err)
	}
}
