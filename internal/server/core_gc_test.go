package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// reportAllocs tells the servers, as the node's client would, that allocs
// reached status.
func reportAllocs(t testing.TB, s *Server, allocs []*structs.Allocation, status string) {
	t.Helper()
	byNode := map[string][]*structs.Allocation{}
	for _, a := range allocs {
		byNode[a.NodeID] = append(byNode[a.NodeID], &structs.Allocation{ID: a.ID, NodeID: a.NodeID, ClientStatus: status})
	}
	for _, upd := range byNode {
		var ur structs.GenericResponse
		if err := s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: upd}, &ur); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "alloc updates applied", func() bool {
		for _, a := range allocs {
			got, _ := s.State().AllocByID(nil, a.ID)
			// Gone: applied and already collected (a test with GC
			// thresholds of milliseconds may collect a finished
			// allocation before this poll looks under a loaded run).
			if got != nil && got.ClientStatus != status {
				return false
			}
		}
		return true
	})
}

func batchJob(id string, count int) *structs.Job {
	j := testJob(id, count)
	j.Type = structs.JobTypeBatch
	return j
}

// gcScene is a cluster state with something of every kind: a finished
// batch job, a running service job, a stopped job whose allocation still
// runs on its client, a down node without allocations and a ready one.
type gcScene struct {
	node, down              *structs.Node
	done, live, stopping    string
	doneEval                string
	doneAllocs, liveAllocs  []*structs.Allocation
	stoppingAlloc           *structs.Allocation
	stoppingVersionsAtStart int
}

func newGCScene(t *testing.T, s *Server) *gcScene {
	t.Helper()
	sc := &gcScene{done: "done", live: "live", stopping: "stopping"}
	sc.node = testNode(t, s, 8000, 8192)
	sc.down = testNode(t, s, 1000, 1024)
	var nr structs.NodeUpdateResponse
	if err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: sc.down.ID, SecretID: sc.down.SecretID,
		Status: structs.NodeStatusDown}, &nr); err != nil {
		t.Fatal(err)
	}

	r := register(t, s, batchJob(sc.done, 3))
	sc.doneEval = evalDone(t, s, r.EvalID).ID
	sc.doneAllocs = allocsOf(t, s, sc.done)
	if len(sc.doneAllocs) != 3 {
		t.Fatalf("batch job placed %d allocs", len(sc.doneAllocs))
	}
	reportAllocs(t, s, sc.doneAllocs, structs.AllocClientStatusComplete)

	evalDone(t, s, register(t, s, testJob(sc.live, 2)).EvalID)
	sc.liveAllocs = allocsOf(t, s, sc.live)
	reportAllocs(t, s, sc.liveAllocs, structs.AllocClientStatusRunning)

	// Two versions, then a stop whose allocation the client has not
	// stopped yet: the job is dead to the servers, its allocation runs.
	evalDone(t, s, register(t, s, testJob(sc.stopping, 1)).EvalID)
	v1 := testJob(sc.stopping, 1)
	v1.Meta = map[string]string{"v": "1"}
	evalDone(t, s, register(t, s, v1).EvalID)
	running := liveAllocs(t, s, sc.stopping)
	if len(running) != 1 {
		t.Fatalf("stopping job has %d live allocs", len(running))
	}
	reportAllocs(t, s, running, structs.AllocClientStatusRunning)
	var dr structs.JobDeregisterResponse
	if err := s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: sc.stopping}, &dr); err != nil {
		t.Fatal(err)
	}
	evalDone(t, s, dr.EvalID)
	sc.stoppingAlloc, _ = s.State().AllocByID(nil, running[0].ID)
	if !sc.stoppingAlloc.ServerTerminalStatus() || sc.stoppingAlloc.ClientStatus != structs.AllocClientStatusRunning {
		t.Fatalf("stopping alloc: desired %s client %s", sc.stoppingAlloc.DesiredStatus, sc.stoppingAlloc.ClientStatus)
	}
	versions, _ := s.State().JobVersionsByID(nil, "default", sc.stopping)
	sc.stoppingVersionsAtStart = len(versions)
	waitFor(t, 10*time.Second, "done job dead", func() bool {
		// Gone counts: with the periodic test's 300 ms thresholds the
		// collector may take the dead job while a loaded run is still
		// building the rest of the scene.
		j, _ := s.State().JobByID(nil, "default", sc.done)
		return j == nil || j.Status == structs.JobStatusDead
	})
	return sc
}

// collected reports whether the finished batch job, its evaluation and
// allocations, and the down node are gone.
func (sc *gcScene) collected(s *Server) bool {
	st := s.State()
	if j, _ := st.JobByID(nil, "default", sc.done); j != nil {
		return false
	}
	if e, _ := st.EvalByID(nil, sc.doneEval); e != nil {
		return false
	}
	for _, a := range sc.doneAllocs {
		if got, _ := st.AllocByID(nil, a.ID); got != nil {
			return false
		}
	}
	n, _ := st.NodeByID(nil, sc.down.ID)
	return n == nil
}

// checkLiveUntouched fails if anything live lost a piece: the running
// service job with its allocations and evaluation, the stopped job whose
// allocation still runs with every version it had (a running allocation's
// job version must survive), the ready node.
func (sc *gcScene) checkLiveUntouched(t *testing.T, s *Server) {
	t.Helper()
	st := s.State()
	for _, id := range []string{sc.live, sc.stopping} {
		if j, _ := st.JobByID(nil, "default", id); j == nil {
			t.Fatalf("job %s was collected", id)
		}
		if evals, _ := st.EvalsByJob(nil, "default", id); len(evals) == 0 {
			t.Fatalf("the evaluations of job %s were collected", id)
		}
	}
	for _, a := range append(append([]*structs.Allocation{}, sc.liveAllocs...), sc.stoppingAlloc) {
		got, _ := st.AllocByID(nil, a.ID)
		if got == nil {
			t.Fatalf("allocation %s (%s) was collected", a.ID, a.JobID)
		}
		if got.Job == nil {
			t.Fatalf("allocation %s lost its job", a.ID)
		}
	}
	v, _ := st.JobByIDAndVersion(nil, "default", sc.stopping, sc.stoppingAlloc.Job.Version)
	if v == nil {
		t.Fatalf("the job version %d the running allocation runs was collected", sc.stoppingAlloc.Job.Version)
	}
	if versions, _ := st.JobVersionsByID(nil, "default", sc.stopping); len(versions) != sc.stoppingVersionsAtStart {
		t.Fatalf("stopping job has %d versions, had %d", len(versions), sc.stoppingVersionsAtStart)
	}
	if n, _ := st.NodeByID(nil, sc.node.ID); n == nil {
		t.Fatal("the ready node was collected")
	}
}

// The leader's periodic collection removes what is finished once it is
// older than the thresholds, and nothing live.
func TestCoreGC_PeriodicAfterThresholds(t *testing.T) {
	s := testServer(t, func(c *Config) {
		c.GC = GCConfig{Interval: 50 * time.Millisecond, JobThreshold: 300 * time.Millisecond,
			EvalThreshold: 300 * time.Millisecond, BatchEvalThreshold: 300 * time.Millisecond,
			DeploymentThreshold: 300 * time.Millisecond, NodeThreshold: 300 * time.Millisecond,
			TimeGranularity: 10 * time.Millisecond}
	})
	sc := newGCScene(t, s)
	waitFor(t, 20*time.Second, "periodic collection", func() bool { return sc.collected(s) })
	sc.checkLiveUntouched(t, s)

	// Once the stopped job's allocation finishes on its client, the job
	// and everything it had go too.
	reportAllocs(t, s, []*structs.Allocation{sc.stoppingAlloc}, structs.AllocClientStatusComplete)
	waitFor(t, 20*time.Second, "stopped job collected", func() bool {
		j, _ := s.State().JobByID(nil, "default", sc.stopping)
		a, _ := s.State().AllocByID(nil, sc.stoppingAlloc.ID)
		v, _ := s.State().JobVersionsByID(nil, "default", sc.stopping)
		return j == nil && a == nil && len(v) == 0
	})
	if j, _ := s.State().JobByID(nil, "default", sc.live); j == nil {
		t.Fatal("the running job was collected")
	}
}

// With Nomad's thresholds nothing young is collected; a forced collection
// (PUT /v1/system/gc) ignores them but still touches nothing live.
func TestCoreGC_ThresholdsAndForce(t *testing.T) {
	s := testServer(t, nil)
	sc := newGCScene(t, s)
	res, err := s.coreGC(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if !gcEmpty(res) || sc.collected(s) {
		t.Fatalf("a collection under the default thresholds removed young objects: %+v", res)
	}
	var reply structs.SystemGCResponse
	if err := s.RPC("System.GarbageCollect", &structs.SystemGCRequest{}, &reply); err != nil {
		t.Fatal(err)
	}
	if !sc.collected(s) {
		t.Fatalf("forced collection left the finished job or the down node: %+v", reply)
	}
	// The finished job's 3 allocations, and the stopped job's first
	// allocation, replaced by its second version and never run.
	if reply.Jobs != 1 || reply.Nodes != 1 || reply.Allocs != 4 {
		t.Fatalf("forced collection reported %+v, want 1 job, 4 allocs, 1 node", reply)
	}
	sc.checkLiveUntouched(t, s)
}

func gcEmpty(r *structs.SystemGCResponse) bool {
	return r.Evals+r.Allocs+r.Jobs+r.Deployments+r.Nodes == 0
}

// The collection is the leader's, and the next leader runs it: after a
// leadership transfer the new leader collects what the old one left.
func TestCoreGC_SurvivesLeaderChange(t *testing.T) {
	servers := testClusterWith(t, 3, func(i int, c *Config) {
		c.GC = GCConfig{Interval: 50 * time.Millisecond, JobThreshold: 300 * time.Millisecond,
			EvalThreshold: 300 * time.Millisecond, BatchEvalThreshold: 300 * time.Millisecond,
			DeploymentThreshold: 300 * time.Millisecond, NodeThreshold: time.Hour,
			TimeGranularity: 10 * time.Millisecond}
	})
	var l *Server
	waitFor(t, 10*time.Second, "leader", func() bool { l = currentLeader(servers); return l != nil && l.IsLeader() })
	if err := l.raft.LeadershipTransfer().Error(); err != nil {
		t.Fatal(err)
	}
	var l2 *Server
	waitFor(t, 10*time.Second, "new leader", func() bool {
		l2 = currentLeader(servers)
		return l2 != nil && l2 != l && l2.IsLeader()
	})
	testNode(t, l2, 8000, 8192)
	r := register(t, l2, batchJob("once", 2))
	evalDone(t, l2, r.EvalID)
	reportAllocs(t, l2, allocsOf(t, l2, "once"), structs.AllocClientStatusComplete)
	waitFor(t, 20*time.Second, "collection by the new leader", func() bool {
		for _, s := range servers {
			if j, _ := s.State().JobByID(nil, "default", "once"); j != nil {
				return false
			}
		}
		return true
	})
}

// BenchmarkCoreGC_TenThousandThroughRaft: 10,000 finished batch
// allocations, placed by the scheduler and reported by their clients, leave
// the servers through Raft once past the thresholds, in entries of at most
// coregc.MaxIDsPerEntry IDs. Reports the time from the last report to an
// empty state.
//
//	go test -run '^$' -bench CoreGC_TenThousand -benchtime 1x ./internal/server
func BenchmarkCoreGC_TenThousandThroughRaft(b *testing.B) {
	for n := 0; n < b.N; n++ {
		s := testServer(b, func(c *Config) {
			c.GC = GCConfig{Interval: 100 * time.Millisecond, JobThreshold: time.Second, EvalThreshold: time.Second,
				BatchEvalThreshold: time.Second, DeploymentThreshold: time.Second, NodeThreshold: time.Hour,
				TimeGranularity: 10 * time.Millisecond}
		})
		for i := 0; i < 10; i++ {
			testNode(b, s, 200000, 1<<20)
		}
		const jobs, per = 10, 1000
		for i := 0; i < jobs; i++ {
			j := batchJob(fmt.Sprintf("b%02d", i), per)
			j.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 10, MemoryMB: 10}
			var resp structs.JobRegisterResponse
			if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: j}, &resp); err != nil {
				b.Fatal(err)
			}
			waitFor(b, 60*time.Second, "placement", func() bool {
				ev, _ := s.State().EvalByID(nil, resp.EvalID)
				return ev != nil && ev.TerminalStatus()
			})
			allocs, _ := s.State().AllocsByJob(nil, "default", j.ID, false)
			if len(allocs) != per {
				b.Fatalf("job %s placed %d allocs", j.ID, len(allocs))
			}
			reportAllocs(b, s, allocs, structs.AllocClientStatusComplete)
		}
		start := time.Now()
		waitFor(b, 120*time.Second, "10,000 allocations, their evaluations and jobs collected", func() bool {
			a, _ := s.State().Allocs(nil)
			e, _ := s.State().Evals(nil)
			j, _ := s.State().Jobs(nil)
			return a.Next() == nil && e.Next() == nil && j.Next() == nil
		})
		b.ReportMetric(time.Since(start).Seconds(), "s-to-empty")
		s.Shutdown()
	}
}

// PUT /v1/system/gc on a follower is run by the leader.
func TestCoreGC_ForceFromFollower(t *testing.T) {
	servers := testCluster(t, 3)
	var l *Server
	waitFor(t, 10*time.Second, "leader", func() bool { l = currentLeader(servers); return l != nil && l.IsLeader() })
	var f *Server
	for _, s := range servers {
		if s != l {
			f = s
		}
	}
	testNode(t, l, 8000, 8192)
	evalDone(t, l, register(t, l, batchJob("once", 1)).EvalID)
	reportAllocs(t, l, allocsOf(t, l, "once"), structs.AllocClientStatusComplete)
	var reply structs.SystemGCResponse
	if err := f.RPC("System.GarbageCollect", &structs.SystemGCRequest{}, &reply); err != nil {
		t.Fatal(err)
	}
	if reply.Jobs != 1 || reply.Allocs != 1 {
		t.Fatalf("forced collection through a follower: %+v", reply)
	}
	waitFor(t, 10*time.Second, "purge replicated", func() bool {
		j, _ := f.State().JobByID(nil, "default", "once")
		return j == nil
	})
}
