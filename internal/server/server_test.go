package server

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/server/clock"
	"github.com/drover-project/drover/internal/structs"
)

func TestRegisterPlacesAndSummaryCounts(t *testing.T) {
	s := testServer(t, nil)
	n1 := testNode(t, s, 4000, 4096)
	testNode(t, s, 4000, 4096)

	resp := register(t, s, testJob("web", 3))
	ev := evalDone(t, s, resp.EvalID)
	if ev.Status != structs.EvalStatusComplete {
		t.Fatalf("eval %s: %s", ev.Status, ev.StatusDescription)
	}
	allocs := liveAllocs(t, s, "web")
	if len(allocs) != 3 {
		t.Fatalf("want 3 allocs, got %d", len(allocs))
	}
	names := map[string]bool{}
	for _, a := range allocs {
		names[a.Name] = true
	}
	for _, want := range []string{"web.web[0]", "web.web[1]", "web.web[2]"} {
		if !names[want] {
			t.Errorf("missing alloc %s in %v", want, names)
		}
	}

	// The client reports them running; the summary follows.
	var upd []*structs.Allocation
	for _, a := range allocs {
		upd = append(upd, &structs.Allocation{ID: a.ID, NodeID: a.NodeID, ClientStatus: structs.AllocClientStatusRunning})
	}
	byNode := map[string][]*structs.Allocation{}
	for _, a := range upd {
		byNode[a.NodeID] = append(byNode[a.NodeID], a)
	}
	for _, list := range byNode {
		var r structs.GenericResponse
		if err := s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: list}, &r); err != nil {
			t.Fatal(err)
		}
	}
	sum, _ := s.State().JobSummaryByID(nil, "default", "web")
	if got := sum.Summary["web"].Running; got != 3 {
		t.Fatalf("summary running = %d, want 3 (%+v)", got, sum.Summary["web"])
	}
	job, _ := s.State().JobByID(nil, "default", "web")
	if job.Status != structs.JobStatusRunning {
		t.Fatalf("job status %q", job.Status)
	}
	_ = n1
}

func TestInvalidJobRefusedNamingField(t *testing.T) {
	s := testServer(t, nil)
	register(t, s, testJob("keep", 1))
	bad := testJob("bad", -1)
	var resp structs.JobRegisterResponse
	err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: bad}, &resp)
	code, msg := structs.ErrorCode(err)
	if code != 400 || !strings.Contains(msg, "Count must not be negative") {
		t.Fatalf("got %d %q", code, msg)
	}
	if j, _ := s.State().JobByID(nil, "default", "keep"); j == nil {
		t.Fatal("earlier job lost after a bad request")
	}
	if j, _ := s.State().JobByID(nil, "default", "bad"); j != nil {
		t.Fatal("invalid job stored")
	}
}

func TestNoCapacityBlocksThenNewNodeUnblocks(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 1000, 1024)
	job := testJob("big", 2)
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 800, MemoryMB: 256}
	resp := register(t, s, job)
	ev := evalDone(t, s, resp.EvalID)
	if ev.BlockedEval == "" || len(ev.FailedTGAllocs) == 0 {
		t.Fatalf("expected a blocked eval and failed allocs, got %+v", ev)
	}
	if m := ev.FailedTGAllocs["web"]; m == nil || m.NodesExhausted == 0 {
		t.Fatalf("metrics do not say the node was exhausted: %+v", m)
	}
	if n := len(liveAllocs(t, s, "big")); n != 1 {
		t.Fatalf("want 1 placed, got %d", n)
	}
	testNode(t, s, 1000, 1024)
	waitFor(t, 10*time.Second, "second alloc placed after capacity appeared", func() bool {
		return len(liveAllocs(t, s, "big")) == 2
	})
}

func TestNodeDownReplacesAllocs(t *testing.T) {
	// Heartbeats expire on a fake clock the test moves, node 2
	// heartbeating between the moves. On the wall clock (a 50 ms TTL and
	// grace, node 2 heartbeating every 20 ms) a loaded run could take node
	// 1 down before its allocation was placed, or node 2 down when one of
	// its heartbeats was late.
	fc := clock.NewFake(time.Now())
	s := testServer(t, func(c *Config) {
		c.HeartbeatClock = fc
		d := DefaultConfig()
		c.MinHeartbeatTTL, c.HeartbeatGrace = d.MinHeartbeatTTL, d.HeartbeatGrace // 10 s each
	})
	n1 := testNode(t, s, 4000, 4096)
	resp := register(t, s, testJob("svc", 1))
	evalDone(t, s, resp.EvalID)
	first := liveAllocs(t, s, "svc")
	if len(first) != 1 || first[0].NodeID != n1.ID {
		t.Fatalf("placement %+v", first)
	}
	// A second node that keeps heartbeating, every 6 s of the clock
	// (within its TTL); node 1 stays silent past its TTL (at most 12 s
	// with jitter) + grace and a sweep.
	n2 := testNode(t, s, 4000, 4096)
	for i := 0; i < 5; i++ {
		fc.Advance(6 * time.Second)
		var r structs.NodeUpdateResponse
		if err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: n2.ID, SecretID: n2.SecretID, Status: structs.NodeStatusReady}, &r); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "node 1 down and alloc replaced on node 2", func() bool {
		n, _ := s.State().NodeByID(nil, n1.ID)
		live := liveAllocs(t, s, "svc")
		return n.Status == structs.NodeStatusDown && len(live) == 1 && live[0].NodeID == n2.ID
	})
	if n, _ := s.State().NodeByID(nil, n2.ID); n.Status != structs.NodeStatusReady {
		t.Fatalf("heartbeating node 2 is %s", n.Status)
	}
	old, _ := s.State().AllocByID(nil, first[0].ID)
	if old.ClientStatus != structs.AllocClientStatusLost {
		t.Fatalf("old alloc client status %q, want lost", old.ClientStatus)
	}
}

func TestDeregisterStopsAndPurgeRemoves(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	evalDone(t, s, register(t, s, testJob("gone", 2)).EvalID)
	var dr structs.JobDeregisterResponse
	if err := s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "gone"}, &dr); err != nil {
		t.Fatal(err)
	}
	evalDone(t, s, dr.EvalID)
	for _, a := range allocsOf(t, s, "gone") {
		if a.DesiredStatus != structs.AllocDesiredStatusStop {
			t.Fatalf("alloc %s desired %s after stop", a.Name, a.DesiredStatus)
		}
	}
	if err := s.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: "gone", Purge: true}, &dr); err != nil {
		t.Fatal(err)
	}
	if j, _ := s.State().JobByID(nil, "default", "gone"); j != nil {
		t.Fatal("purged job still stored")
	}
}

func TestBlockingQueryReturnsOnChange(t *testing.T) {
	s := testServer(t, nil)
	// An empty table has index 0, which never blocks: start from a settled write.
	evalDone(t, s, register(t, s, testJob("first", 1)).EvalID)
	var first structs.JobListResponse
	if err := s.RPC("Job.List", &structs.JobListRequest{}, &first); err != nil {
		t.Fatal(err)
	}
	done := make(chan structs.JobListResponse, 1)
	start := time.Now()
	go func() {
		var r structs.JobListResponse
		s.RPC("Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{MinQueryIndex: first.Index, MaxQueryTime: 30 * time.Second}}, &r)
		done <- r
	}()
	time.Sleep(50 * time.Millisecond) // let the query block (not synchronisation of the result)
	register(t, s, testJob("new", 1))
	select {
	case r := <-done:
		if len(r.Jobs) != 2 || r.Index <= first.Index {
			t.Fatalf("blocking query returned %d jobs at index %d", len(r.Jobs), r.Index)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("blocking query took %v", time.Since(start))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocking query never returned")
	}
}

func TestKeyringCreatedOnceAndServed(t *testing.T) {
	s := testServer(t, nil)
	var resp structs.KeyringListPublicResponse
	waitFor(t, 5*time.Second, "first signing key", func() bool {
		resp = structs.KeyringListPublicResponse{}
		return s.RPC("Keyring.ListPublic", &structs.GenericRequest{}, &resp) == nil && len(resp.PublicKeys) == 1
	})
	if resp.PublicKeys[0].Algorithm != "EdDSA" || len(resp.PublicKeys[0].PublicKey) == 0 {
		t.Fatalf("bad key %+v", resp.PublicKeys[0])
	}
}

// A client on a fresh cluster must be able to block: its first pull can
// never answer index 0 (a pull with index 0 returns at once, so the client
// would spin).
func TestGetClientAllocsBlocksOnFreshCluster(t *testing.T) {
	s := testServer(t, nil)
	n := testNode(t, s, 4000, 4096)
	var first structs.NodeClientAllocsResponse
	req := &structs.NodeSpecificRequest{NodeID: n.ID, SecretID: n.SecretID}
	if err := s.RPC("Node.GetClientAllocs", req, &first); err != nil {
		t.Fatal(err)
	}
	if first.Index == 0 {
		t.Fatal("first pull answered index 0")
	}
	req.MinQueryIndex = first.Index
	req.MaxQueryTime = 200 * time.Millisecond
	start := time.Now()
	var second structs.NodeClientAllocsResponse
	if err := s.RPC("Node.GetClientAllocs", req, &second); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 150*time.Millisecond {
		t.Fatalf("pull with nothing new returned after %v instead of blocking", time.Since(start))
	}
	resp := register(t, s, testJob("wake", 1))
	evalDone(t, s, resp.EvalID)
	req.MaxQueryTime = 10 * time.Second
	var third structs.NodeClientAllocsResponse
	if err := s.RPC("Node.GetClientAllocs", req, &third); err != nil || len(third.Allocs) != 1 {
		t.Fatalf("pull after placement: %v %+v", err, third.Allocs)
	}
}

// An idle node's pull is not woken by placements on other nodes, but is by
// the deletion of its own last allocation.
func TestGetClientAllocsIndexIsPerNode(t *testing.T) {
	s := testServer(t, nil)
	busy := testNode(t, s, 4000, 4096)
	idle := testNode(t, s, 10, 10) // too small for the job: stays empty
	pull := func(n *structs.Node, min uint64, wait time.Duration) *structs.NodeClientAllocsResponse {
		var r structs.NodeClientAllocsResponse
		req := &structs.NodeSpecificRequest{NodeID: n.ID, SecretID: n.SecretID,
			QueryOptions: structs.QueryOptions{MinQueryIndex: min, MaxQueryTime: wait}}
		if err := s.RPC("Node.GetClientAllocs", req, &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	first := pull(idle, 0, 0)
	evalDone(t, s, register(t, s, testJob("elsewhere", 2)).EvalID)
	if got := pull(idle, 0, 0).Index; got != first.Index {
		t.Fatalf("placements on another node moved the idle node's index %d -> %d", first.Index, got)
	}
	// The busy node's own status update is not news to its client: the
	// index stays, so the pull it is parked in keeps waiting.
	b := pull(busy, 0, 0)
	var ids []string
	var upd []*structs.Allocation
	for id := range b.Allocs {
		ids = append(ids, id)
		upd = append(upd, &structs.Allocation{ID: id, NodeID: busy.ID, ClientStatus: structs.AllocClientStatusRunning})
	}
	var ur structs.GenericResponse
	if err := s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: upd}, &ur); err != nil {
		t.Fatal(err)
	}
	if got := pull(busy, 0, 0); got.Index != b.Index {
		t.Fatalf("the client's own update moved its pull index %d -> %d", b.Index, got.Index)
	}
	// Parked without reading the store, a pull whose time is up still
	// answers the node's full alloc map (an empty one would tell the client
	// to destroy everything).
	if got := pull(busy, b.Index, 100*time.Millisecond); got.Index != b.Index || len(got.Allocs) != len(b.Allocs) {
		t.Fatalf("parked pull answered index %d with %d allocs after the client's own update (was %d with %d)",
			got.Index, len(got.Allocs), b.Index, len(b.Allocs))
	}
	// An up-to-date pull with the wrong secret is refused, not parked.
	var denied structs.NodeClientAllocsResponse
	err := s.RPC("Node.GetClientAllocs", &structs.NodeSpecificRequest{NodeID: busy.ID, SecretID: "wrong",
		QueryOptions: structs.QueryOptions{MinQueryIndex: b.Index, MaxQueryTime: time.Minute}}, &denied)
	if err == nil || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("wrong secret: %v", err)
	}
	// The busy node's allocs disappear (GC): its pull index must move.
	if _, _, err := s.raftApply(structs.EvalDeleteRequestType, &structs.EvalDeleteRequest{Allocs: ids}); err != nil {
		t.Fatal(err)
	}
	after := pull(busy, b.Index, 5*time.Second)
	if after.Index <= b.Index || len(after.Allocs) != 0 {
		t.Fatalf("GC of the node's allocs not seen: index %d -> %d, %d allocs", b.Index, after.Index, len(after.Allocs))
	}
}
