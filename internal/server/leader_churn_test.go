package server

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/structs"
)

// r3Changes is how many leadership changes TestLeadershipChurnWithFaults
// drives: 100 by default, DROVER_R3_CHANGES=1000 for the R3 figure.
func r3Changes(t *testing.T) int {
	if v := os.Getenv("DROVER_R3_CHANGES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("DROVER_R3_CHANGES=%q: want a positive number", v)
		}
		return n
	}
	return 100
}

// TestLeadershipChurnWithFaults is reliability figure R3 (seed 004): the
// leadership of a three-server cluster changes again and again, by forced
// transfers and by isolating the leader in the Raft transport, while every
// link randomly drops and delays Raft messages and every server serves
// reads and writes. No Raft call may hang (a deadlock shows as a transfer
// or an election that never ends), every RPC returns with a result or an
// error, and once the faults stop exactly one set of leader-only services
// runs, on the leader.
func TestLeadershipChurnWithFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("long-running cluster test")
	}
	want := r3Changes(t)
	f := newFaults()
	servers := testClusterWith(t, 3, func(i int, cfg *Config) {
		self := cfg.RPCListener.Addr().String()
		cfg.wrapRaftTransport = func(inner raft.Transport) raft.Transport {
			return &faultTransport{Transport: inner, f: f, self: self}
		}
		cfg.RPCHoldTimeout = 2 * time.Second
		// Churn is the point here: the fast timeouts make elections after
		// an isolation quick, and a leader deposed by a pause is one more
		// change the test tolerates.
		rc := *cfg.RaftConfig
		rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = 100*time.Millisecond, 100*time.Millisecond, 50*time.Millisecond
		cfg.RaftConfig = &rc
	})
	waitFor(t, 20*time.Second, "first leader", func() bool { return currentLeader(servers) != nil })
	f.setRandom(0.02, 0.10, 20*time.Millisecond)

	// Load: every server answers consistent and stale reads and forwards
	// writes and heartbeats; each call is timed.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var started, finished, failed atomic.Int64
	var slowest atomic.Int64
	call := func(s *Server, method string, args, reply any) {
		started.Add(1)
		t0 := time.Now()
		if err := s.RPC(method, args, reply); err != nil {
			failed.Add(1)
		}
		if d := int64(time.Since(t0)); d > slowest.Load() {
			slowest.Store(d)
		}
		finished.Add(1)
	}
	for i, s := range servers {
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func(i, w int, s *Server) {
				defer wg.Done()
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					call(s, "Job.List", &structs.JobListRequest{}, &structs.JobListResponse{})
					call(s, "Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{AllowStale: true}}, &structs.JobListResponse{})
					call(s, "Job.Register", &structs.JobRegisterRequest{Job: testJob(fmt.Sprintf("j%d-%d-%d", i, w, n%4), 0)}, &structs.JobRegisterResponse{})
					var leader string
					call(s, "Status.Leader", &structs.GenericRequest{}, &leader)
				}
			}(i, w, s)
		}
	}

	// Two terms' leader loops must never run at once on one server (two
	// plan appliers, two drainers): sample how many run.
	var maxTasks atomic.Int32
	sampleDone := make(chan struct{})
	go func() {
		defer close(sampleDone)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
			for _, s := range servers {
				if n := s.leaderTasks.Load(); n > maxTasks.Load() {
					maxTasks.Store(n)
				}
			}
		}
	}()

	// waitNewLeader waits for a leader other than old (or the same one in
	// a later term). A Raft that is blocked never gets there.
	waitNewLeader := func(old *Server, oldTerm uint64, d time.Duration) *Server {
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			if l := currentLeader(servers); l != nil && (l != old || l.raft.CurrentTerm() > oldTerm) {
				return l
			}
			time.Sleep(2 * time.Millisecond)
		}
		return nil
	}
	start := time.Now()
	changes, transfers, isolations, attempts := 0, 0, 0, 0
	for changes < want {
		attempts++
		if attempts > want*5 {
			t.Fatalf("only %d leadership changes in %d attempts", changes, attempts)
		}
		var l *Server
		waitFor(t, 30*time.Second, fmt.Sprintf("a leader before change %d (Raft blocked?)", changes), func() bool {
			l = currentLeader(servers)
			return l != nil
		})
		term := l.raft.CurrentTerm()
		if attempts%3 == 0 {
			// The leader loses every link until another server leads.
			f.isolate(l.RPCAddr(), true)
			next := waitNewLeader(l, term, 30*time.Second)
			f.isolate(l.RPCAddr(), false)
			if next == nil {
				t.Fatalf("change %d: no new leader within 30s of isolating the leader", changes)
			}
			isolations++
			changes++
			continue
		}
		done := make(chan error, 1)
		go func() { done <- l.raft.LeadershipTransfer().Error() }()
		select {
		case <-done: // a transfer may fail under faults: then it did not count
		case <-time.After(30 * time.Second):
			t.Fatalf("change %d: leadership transfer hung: Raft is blocked", changes)
		}
		if waitNewLeader(l, term, 5*time.Second) != nil {
			transfers++
			changes++
		}
	}
	elapsed := time.Since(start)
	f.setRandom(0, 0, 0)
	close(stop)
	waitDone := make(chan struct{})
	go func() { wg.Wait(); close(waitDone) }()
	select {
	case <-waitDone:
	case <-time.After(60 * time.Second):
		t.Fatalf("RPC callers never returned: %d started, %d finished", started.Load(), finished.Load())
	}
	<-sampleDone
	if m := maxTasks.Load(); m > leaderLoopTasks {
		t.Fatalf("%d leader loops ran at once on one server (one term has %d): two terms overlapped", m, leaderLoopTasks)
	}
	if started.Load() != finished.Load() {
		t.Fatalf("%d RPCs started, %d returned", started.Load(), finished.Load())
	}
	if finished.Load() == 0 {
		t.Fatal("no RPC completed during the churn")
	}
	// Every call is bounded: forwarding holds RPCHoldTimeout, a Raft apply
	// its enqueue timeout; nothing may wait for ever.
	if s := time.Duration(slowest.Load()); s > 35*time.Second {
		t.Fatalf("slowest RPC took %s", s)
	}

	// Settled: exactly one set of leader services, on the leader.
	var settleErr string
	settled := func() bool {
		l := currentLeader(servers)
		if l == nil || !l.IsLeader() {
			settleErr = "no leader"
			return false
		}
		for _, s := range servers {
			lead := s == l
			up := s.servicesUp.Load() == 1
			tasks := s.leaderTasks.Load()
			wantTasks := int32(0)
			if lead {
				wantTasks = leaderLoopTasks
			}
			if up != lead || tasks != wantTasks || s.broker.Enabled() != lead || s.blocked.Enabled() != lead ||
				s.planQueue.Enabled() != lead || s.heartbeats.Enabled() != lead || s.deployWatcher.Enabled() != lead ||
				s.periodic.Enabled() != lead {
				settleErr = fmt.Sprintf("%s (leader %v): services up %v, %d leader loops, broker %v, blocked %v, plan queue %v, heartbeats %v, deployments %v, periodic %v",
					s.config.NodeName, lead, up, tasks, s.broker.Enabled(), s.blocked.Enabled(), s.planQueue.Enabled(),
					s.heartbeats.Enabled(), s.deployWatcher.Enabled(), s.periodic.Enabled())
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(30 * time.Second); !settled(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("leader services not on exactly the leader after 30s: %s", settleErr)
		}
	}

	// The cluster still works: writes through every server, and the
	// leader's broker and workers finish an evaluation.
	for _, s := range servers {
		var rr structs.JobRegisterResponse
		if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: testJob("after-"+s.config.NodeName, 0)}, &rr); err != nil {
			t.Fatalf("write via %s after the churn: %v", s.config.NodeName, err)
		}
		if s == currentLeader(servers) {
			evalDone(t, s, rr.EvalID)
		}
	}
	f.mu.Lock()
	dropped, delayed := f.dropped, f.delayed
	f.mu.Unlock()
	total := int64(0)
	for _, s := range servers {
		total += s.establishCount.Load()
	}
	t.Logf("R3: %d leadership changes (%d transfers, %d leader isolations) in %s; %d RPCs all returned (%d with an error), slowest %s; %d Raft messages dropped, %d delayed; leader services established %d times",
		changes, transfers, isolations, elapsed.Round(time.Millisecond), finished.Load(), failed.Load(),
		time.Duration(slowest.Load()).Round(time.Millisecond), dropped, delayed, total)
}
