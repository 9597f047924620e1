package client

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/client/testutil"
	"github.com/drover-project/drover/internal/drivers"
	"github.com/drover-project/drover/internal/drivers/mock"
	"github.com/drover-project/drover/internal/structs"
	"github.com/hashicorp/go-hclog"
)

type testClient struct {
	*Client
	srv *fakeServer
	drv *mock.Driver
}

func newTestClient(t *testing.T, mut func(*Config)) *testClient {
	t.Helper()
	srv := newFakeServer()
	drv := mock.New()
	cfg := Config{
		Name: "test-node", DataDir: t.TempDir(), DevMode: true, RPC: srv,
		Drivers: []drivers.Driver{drv}, Version: "0.1.0", MaxKillTimeout: 2 * time.Second,
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}}),
	}
	if mut != nil {
		mut(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	t.Cleanup(func() { c.Shutdown() })
	return &testClient{Client: c, srv: srv, drv: drv}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (tc *testClient) waitReady(t *testing.T) {
	testutil.WaitFor(t, 10*time.Second, func() error {
		n := tc.srv.node(tc.NodeID())
		if n == nil || n.Status != structs.NodeStatusReady {
			return testutil.Errorf("node %+v not ready", n)
		}
		return nil
	})
}

func (tc *testClient) waitServerStatus(t *testing.T, id, status string) *structs.Allocation {
	t.Helper()
	var a *structs.Allocation
	testutil.WaitFor(t, 10*time.Second, func() error {
		a = tc.srv.alloc(id)
		if a == nil || a.ClientStatus != status {
			return testutil.Errorf("server copy of alloc: %+v, want client status %s", a, status)
		}
		return nil
	})
	return a
}

func (tc *testClient) place(jobType string, tasks ...*structs.Task) *structs.Allocation {
	a := testutil.Alloc(jobType, tasks...)
	a.NodeID = tc.NodeID()
	tc.srv.upsertAlloc(a)
	return a
}

func TestClient_RegisterHeartbeatReady(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	n := tc.srv.node(tc.NodeID())
	if n.Name != "test-node" || n.Drivers["mock_driver"] == nil || !n.Drivers["mock_driver"].Healthy ||
		n.Attributes["driver.mock_driver"] != "1" || n.NodeResources.Cpu.CpuShares == 0 || n.SecretID == "" {
		t.Fatalf("registered node incomplete: %+v", n)
	}
	// Heartbeats continue every TTL.
	testutil.WaitFor(t, 10*time.Second, func() error {
		tc.srv.mu.Lock()
		defer tc.srv.mu.Unlock()
		if len(tc.srv.statuses) < 3 {
			return testutil.Errorf("%d heartbeats", len(tc.srv.statuses))
		}
		return nil
	})
}

func TestClient_ReregistersWhenServerForgetsNode(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	tc.srv.forgetNode()
	tc.waitReregistered(t)
}

// A server that has not restored its state yet answers "No cluster leader"
// (as a plain string, the way it crosses the RPC connection): the client
// retries its heartbeats and pulls, and does not take it for "node not
// found" and register again.
func TestClient_NoLeaderIsRetriedWithoutReregistering(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	tc.srv.mu.Lock()
	regs, beats := tc.srv.regs, len(tc.srv.statuses)
	tc.srv.failWith = errors.New(structs.ErrNoLeader.Error())
	tc.srv.failNext["Node.UpdateStatus"] = 3
	tc.srv.failNext["Node.GetClientAllocs"] = 3
	tc.srv.bump() // end the pull in flight, so the next ones fail
	tc.srv.mu.Unlock()
	testutil.WaitFor(t, 20*time.Second, func() error {
		tc.srv.mu.Lock()
		defer tc.srv.mu.Unlock()
		if n := tc.srv.failNext["Node.UpdateStatus"] + tc.srv.failNext["Node.GetClientAllocs"]; n > 0 {
			return testutil.Errorf("%d failures not yet answered", n)
		}
		if len(tc.srv.statuses) <= beats {
			return testutil.Errorf("no heartbeat after the failures")
		}
		return nil
	})
	// The pull retried past its failures too: new work still arrives.
	a := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "1h"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	tc.srv.mu.Lock()
	defer tc.srv.mu.Unlock()
	if tc.srv.regs != regs {
		t.Fatalf("client registered again (%d registrations, was %d) on \"No cluster leader\"", tc.srv.regs, regs)
	}
}

// waitReregistered waits until the client has registered again after
// the fake server forgot its node.
func (tc *testClient) waitReregistered(t *testing.T) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, func() error {
		tc.srv.mu.Lock()
		defer tc.srv.mu.Unlock()
		if tc.srv.regs <= tc.srv.regsAtForget {
			return testutil.Errorf("not re-registered")
		}
		return nil
	})
}

// A client registered anew (its node was purged or lost by the servers)
// sends every allocation's state again, unchanged ones included: the
// servers keep a returning node with live allocations initializing until
// they have heard them.
func TestClient_ReregistrationResendsAllocStates(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	a := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "1h"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	sent := func() int { return tc.srv.updatesSent(a.ID, structs.AllocClientStatusRunning) }
	before := sent()
	tc.srv.forgetNode()
	tc.waitReregistered(t)
	testutil.WaitFor(t, 10*time.Second, func() error {
		if sent() <= before {
			return testutil.Errorf("running state sent %d times (before %d)", sent(), before)
		}
		return nil
	})
}

// An allocation the servers stopped before this client ran it is reported
// complete without running: otherwise it stays pending on the servers and
// holds its node's resources for good. One that already finished (a client
// restart) is left alone.
func TestClient_StoppedBeforeRunIsReportedComplete(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	a := testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "1h"}))
	a.NodeID = tc.NodeID()
	a.DesiredStatus = structs.AllocDesiredStatusStop
	tc.srv.upsertAlloc(a)
	done := testutil.Alloc(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "1h"}))
	done.NodeID = tc.NodeID()
	done.DesiredStatus = structs.AllocDesiredStatusStop
	done.ClientStatus = structs.AllocClientStatusComplete
	tc.srv.upsertAlloc(done)

	got := tc.waitServerStatus(t, a.ID, structs.AllocClientStatusComplete)
	if got.ClientDescription != "Allocation was stopped before it started" {
		t.Fatalf("description %q", got.ClientDescription)
	}
	for _, l := range tc.Allocs() {
		if l.ID == a.ID {
			t.Fatal("a runner was started for an allocation stopped before it ran")
		}
	}
	time.Sleep(1200 * time.Millisecond) // a full non-urgent window
	if n := tc.srv.updatesSent(a.ID, structs.AllocClientStatusComplete); n != 1 {
		t.Fatalf("complete sent %d times", n)
	}
	if n := tc.srv.updatesSent(done.ID, structs.AllocClientStatusComplete); n != 0 {
		t.Fatalf("an already finished allocation was reported %d times", n)
	}
}

func TestClient_RegisterRetriesUntilServerAnswers(t *testing.T) {
	srv := newFakeServer()
	srv.failNext["Node.Register"] = 2
	tc := newTestClient(t, func(c *Config) { c.RPC = srv })
	tc.srv = srv
	tc.waitReady(t)
}

func TestClient_PersistentNodeID(t *testing.T) {
	dir := t.TempDir()
	mk := func() *Client {
		c, err := New(Config{DataDir: dir, RPC: newFakeServer()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := mk()
	a.Shutdown() // releases the state database for the next client
	b := mk()
	defer b.Shutdown()
	if a.NodeID() != b.NodeID() || a.secretID() != b.secretID() || a.NodeID() == a.secretID() {
		t.Fatalf("IDs not persisted: %s/%s vs %s/%s", a.NodeID(), a.secretID(), b.NodeID(), b.secretID())
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "client", "client-id")); string(got) != a.NodeID() {
		t.Fatalf("client-id file %q", got)
	}
	d1, _ := New(Config{DevMode: true, DataDir: t.TempDir(), RPC: newFakeServer()})
	d2, _ := New(Config{DevMode: true, DataDir: t.TempDir(), RPC: newFakeServer()})
	if d1.NodeID() == d2.NodeID() {
		t.Fatal("dev mode reused a node ID")
	}
}

func TestClient_BatchAllocRunsAndCompletes(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	// Long enough for the running state to reach the servers before the
	// complete one replaces it in the sync's batch (a 200 ms tick that a
	// loaded race run can stretch past a 300 ms task).
	a := tc.place(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "3s"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	got := tc.waitServerStatus(t, a.ID, structs.AllocClientStatusComplete)
	st := got.TaskStates["t"]
	if st == nil || st.State != structs.TaskStateDead || st.Failed {
		t.Fatalf("task state %+v", st)
	}
	if tc.drv.StartCount("t") != 1 {
		t.Fatalf("started %d times", tc.drv.StartCount("t"))
	}
	// Updates carry only client-owned fields.
	tc.srv.mu.Lock()
	for _, batch := range tc.srv.updates {
		for _, u := range batch {
			if u.Job != nil || u.DesiredStatus != "" || u.NodeID != tc.NodeID() {
				t.Errorf("update not stripped: %+v", u)
			}
		}
	}
	tc.srv.mu.Unlock()
}

// A pull that carries the changed allocations needs no Alloc.GetAllocs;
// against a server that does not send them the client fetches them.
func TestClient_PullCarriesChangedAllocs(t *testing.T) {
	for _, old := range []bool{false, true} {
		tc := newTestClient(t, nil)
		tc.srv.mu.Lock()
		tc.srv.noChanged = old
		tc.srv.mu.Unlock()
		tc.waitReady(t)
		a := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
		tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
		tc.srv.stopAlloc(a.ID)
		tc.waitServerStatus(t, a.ID, structs.AllocClientStatusComplete)
		tc.srv.mu.Lock()
		fetches := tc.srv.getAllocs
		tc.srv.mu.Unlock()
		if old && fetches < 2 || !old && fetches != 0 {
			t.Fatalf("older server %v: %d Alloc.GetAllocs calls", old, fetches)
		}
		tc.Shutdown()
	}
}

func TestClient_DesiredStopKillsThenGCDestroys(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	a := tc.place(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "-1s"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusRunning)
	tc.srv.stopAlloc(a.ID)
	got := tc.waitServerStatus(t, a.ID, structs.AllocClientStatusComplete)
	ev := got.TaskStates["t"].Events
	if ev[len(ev)-1].Type != structs.TaskKilled {
		t.Fatalf("last event %s", ev[len(ev)-1].Type)
	}
	tc.srv.gcAlloc(a.ID)
	testutil.WaitFor(t, 10*time.Second, func() error {
		if _, err := tc.getAllocRunner(a.ID); err == nil {
			return testutil.Errorf("runner still present")
		}
		return nil
	})
}

func TestClient_RestartPolicyReported(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	a := testutil.Alloc(structs.JobTypeService, testutil.MockTask("t", map[string]any{"run_for": "10ms", "exit_code": 1}))
	a.Job.TaskGroups[0].RestartPolicy.Attempts = 2
	a.NodeID = tc.NodeID()
	tc.srv.upsertAlloc(a)
	got := tc.waitServerStatus(t, a.ID, structs.AllocClientStatusFailed)
	if st := got.TaskStates["t"]; st.Restarts != 2 || !st.Failed {
		t.Fatalf("task state restarts=%d failed=%v", st.Restarts, st.Failed)
	}
}

func TestClient_AllocSyncRetriesFailedUpdates(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	tc.srv.mu.Lock()
	tc.srv.failNext["Node.UpdateAlloc"] = 2
	tc.srv.mu.Unlock()
	a := tc.place(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "1ms"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusComplete)
}

func TestClient_NoDuplicateUpdates(t *testing.T) {
	tc := newTestClient(t, nil)
	tc.waitReady(t)
	a := tc.place(structs.JobTypeBatch, testutil.MockTask("t", map[string]any{"run_for": "1ms"}))
	tc.waitServerStatus(t, a.ID, structs.AllocClientStatusComplete)
	count := func() int { return tc.srv.updatesSent(a.ID, structs.AllocClientStatusComplete) }
	// A no-op server-side change makes the client re-pull the alloc; the
	// terminal state it already acknowledged must not be sent again.
	before := count()
	tc.srv.upsertAlloc(tc.srv.alloc(a.ID))
	// Wait for a full non-urgent window past the re-pull.
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if count() != before {
			t.Fatalf("complete state sent again (%d -> %d)", before, count())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestClient_DetectForeignPorts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	want := "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + "/tcp"
	tc := newTestClient(t, func(c *Config) { c.DetectForeignPorts = true })
	testutil.WaitFor(t, 10*time.Second, func() error {
		n := tc.srv.node(tc.NodeID())
		if n == nil || !slices.Contains(n.ForeignPorts, want) {
			return testutil.Errorf("server's node lacks foreign port %s", want)
		}
		return nil
	})
}
