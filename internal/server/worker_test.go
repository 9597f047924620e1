package server

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// blockingUpdates is a worker RPC hook that holds the first Eval.Update
// carrying a terminal status until release is closed, then lets it through
// (or fails it with err).
type blockingUpdates struct {
	srv     atomic.Pointer[Server]
	held    chan string // eval ID of the held update
	release chan struct{}
	err     error
	once    sync.Once
}

func newBlockingUpdates() *blockingUpdates {
	return &blockingUpdates{held: make(chan string, 1), release: make(chan struct{})}
}

func (h *blockingUpdates) rpc(method string, args, reply any) error {
	if method == "Eval.Update" {
		req := args.(*structs.EvalUpdateRequest)
		hold := false
		if req.Evals[0].TerminalStatus() {
			h.once.Do(func() { hold = true })
		}
		if hold {
			h.held <- req.Evals[0].ID
			<-h.release
			if h.err != nil {
				return h.err
			}
		}
	}
	srv := h.srv.Load()
	if srv == nil {
		return errors.New("test server not started yet")
	}
	return srv.RPC(method, args, reply)
}

// The status write of an evaluation does not hold its worker: while one
// eval's completion is still being written, the worker schedules the next
// job's eval. The first eval stays outstanding in the broker (so no other
// eval of its job is handed out) and pending in the state until its write
// commits, and only then is it acked.
func TestWorker_CompletionDoesNotHoldWorker(t *testing.T) {
	h := newBlockingUpdates()
	s := testServer(t, func(c *Config) {
		c.NumSchedulers = 1
		c.workers = 1
		c.workerRPC = h.rpc
	})
	h.srv.Store(s)
	testNode(t, s, 4000, 4000)

	a := register(t, s, testJob("a", 1))
	var heldID string
	select {
	case heldID = <-h.held:
	case <-time.After(10 * time.Second):
		t.Fatal("the first eval's status update never came")
	}
	if heldID != a.EvalID {
		t.Fatalf("held update is for %s, want %s", heldID, a.EvalID)
	}
	// Job a's plan committed; its eval is not complete yet, and still
	// outstanding.
	waitFor(t, 5*time.Second, "a placed", func() bool { return len(liveAllocs(t, s, "a")) == 1 })
	if ev, _ := s.State().EvalByID(nil, a.EvalID); ev == nil || ev.Status != structs.EvalStatusPending {
		t.Fatalf("eval a before its status write: %+v", ev)
	}
	if _, ok := s.broker.Outstanding(a.EvalID); !ok {
		t.Fatal("eval a was acked before its status write committed")
	}

	// The only worker goes on with job b meanwhile.
	b := register(t, s, testJob("b", 1))
	if ev := evalDone(t, s, b.EvalID); ev.Status != structs.EvalStatusComplete {
		t.Fatalf("eval b: %s", ev.Status)
	}
	if _, ok := s.broker.Outstanding(a.EvalID); !ok {
		t.Fatal("eval a left the broker while its status write was held")
	}

	close(h.release)
	if ev := evalDone(t, s, a.EvalID); ev.Status != structs.EvalStatusComplete {
		t.Fatalf("eval a: %s", ev.Status)
	}
	waitFor(t, 5*time.Second, "eval a acked", func() bool {
		_, ok := s.broker.Outstanding(a.EvalID)
		return !ok && s.broker.Stats().TotalUnacked == 0
	})
}

// An evaluation whose status write fails is nacked, redelivered and run
// again; the re-run places nothing twice.
func TestWorker_FailedStatusWriteNacks(t *testing.T) {
	h := newBlockingUpdates()
	h.err = errors.New("injected status write failure")
	close(h.release)
	var deliveries atomic.Int32
	var evalID atomic.Value
	evalID.Store("")
	s := testServer(t, func(c *Config) {
		c.NumSchedulers = 1
		c.workerRPC = func(method string, args, reply any) error {
			err := h.rpc(method, args, reply)
			if method == "Eval.Dequeue" && err == nil {
				if r := reply.(*structs.EvalDequeueResponse); r.Eval != nil && r.Eval.ID == evalID.Load().(string) {
					deliveries.Add(1)
				}
			}
			return err
		}
	})
	h.srv.Store(s)
	testNode(t, s, 4000, 4000)

	job := testJob("j", 1)
	job.ID = "j"
	// Know the eval's ID before a worker can dequeue it: register through
	// the state directly is not possible, so match the job instead.
	resp := register(t, s, job)
	evalID.Store(resp.EvalID)
	statusWriteFor(t, h.held, resp.EvalID)
	completedOnce(t, s, resp.EvalID, "j")
	if d := deliveries.Load(); d < 1 {
		t.Fatalf("redelivery not seen (%d deliveries counted after registration)", d)
	}
}

// A kept-back status update is written before any later planner call, in
// order; an update of another eval is written at once.
func TestWorker_DeferredUpdateKeepsOrder(t *testing.T) {
	var calls []string
	s := &Server{config: DefaultConfig()}
	w := &Worker{srv: s, inflight: make(chan struct{}, 1), rpc: func(method string, args, reply any) error {
		req := args.(*structs.EvalUpdateRequest)
		calls = append(calls, method+":"+req.Evals[0].ID+":"+req.Evals[0].Status)
		return nil
	}}
	w.eval, w.token = &structs.Evaluation{ID: "e1"}, "tok"

	if err := w.UpdateEval(&structs.Evaluation{ID: "e1", Status: structs.EvalStatusComplete}); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 0 {
		t.Fatalf("update written at once: %v", calls)
	}
	if err := w.CreateEval(&structs.Evaluation{ID: "e2", Status: structs.EvalStatusBlocked}); err != nil {
		t.Fatal(err)
	}
	want := []string{"Eval.Update:e1:complete", "Eval.Create:e2:blocked"}
	if len(calls) != 2 || calls[0] != want[0] || calls[1] != want[1] {
		t.Fatalf("calls %v, want %v", calls, want)
	}
	if w.deferred != nil {
		t.Fatal("flushed update still kept back")
	}

	calls = nil
	if err := w.UpdateEval(&structs.Evaluation{ID: "other", Status: structs.EvalStatusComplete}); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0] != "Eval.Update:other:complete" {
		t.Fatalf("update of another eval: %v", calls)
	}

	// A second update of the same eval replaces nothing silently: the first
	// is written, the second kept back.
	calls = nil
	w.UpdateEval(&structs.Evaluation{ID: "e1", Status: structs.EvalStatusPending})
	w.UpdateEval(&structs.Evaluation{ID: "e1", Status: structs.EvalStatusComplete})
	if len(calls) != 1 || calls[0] != "Eval.Update:e1:pending" {
		t.Fatalf("calls %v", calls)
	}
	if w.deferred == nil || w.deferred.Evals[0].Status != structs.EvalStatusComplete || w.deferred.EvalToken != "tok" {
		t.Fatalf("kept back: %+v", w.deferred)
	}
}

// Leadership moves while an evaluation's status write is in flight: the
// write and the ack fail against the old delivery, the eval is still
// pending in the state, the new leader runs it again, and nothing hangs.
func TestWorker_LeadershipLostWithCompletionInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	// One gate for the cluster: the first terminal status write, whichever
	// server's worker makes it, is held.
	gate := newBlockingUpdates()
	var srvs [3]atomic.Pointer[Server]
	servers := testClusterWith(t, 3, func(i int, c *Config) {
		c.workerRPC = func(method string, args, reply any) error {
			if method == "Eval.Update" && args.(*structs.EvalUpdateRequest).Evals[0].TerminalStatus() {
				hold := false
				gate.once.Do(func() { hold = true })
				if hold {
					gate.held <- args.(*structs.EvalUpdateRequest).Evals[0].ID
					<-gate.release
				}
			}
			s := srvs[i].Load()
			if s == nil {
				return errors.New("test server not started yet")
			}
			return s.RPC(method, args, reply)
		}
	})
	for i, s := range servers {
		srvs[i].Store(s)
	}
	released := false
	release := func() {
		if !released {
			released = true
			close(gate.release)
		}
	}
	defer release()
	l := waitLeader(t, servers, 10*time.Second, "leader")
	testNode(t, l, 4000, 4000)
	resp := register(t, l, testJob("j", 1))
	statusWriteFor(t, gate.held, resp.EvalID)
	waitFor(t, 10*time.Second, "placement committed", func() bool { return len(liveAllocs(t, l, "j")) == 1 })

	if err := l.raft.LeadershipTransfer().Error(); err != nil {
		t.Fatal(err)
	}
	var nl *Server
	waitFor(t, 10*time.Second, "new leader", func() bool {
		nl = currentLeader(servers)
		return nl != nil && nl != l && nl.IsLeader()
	})
	release()

	completedOnce(t, nl, resp.EvalID, "j")

	done := make(chan struct{})
	go func() {
		for _, s := range servers {
			s.Shutdown()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("shutdown hung")
	}
}

// A worker waiting for its plan to commit holds no scheduler slot: with one
// slot (NumSchedulers = 1), several evaluations' plans are in the applier at
// once, and no more than one evaluation is ever being computed.
func TestWorker_PlanWaitFreesSchedulerSlot(t *testing.T) {
	held := make(chan struct{}, 16)
	release := make(chan struct{})
	var maxSlots atomic.Int32
	s := heldPlansServer(t, func(*structs.Plan) bool { return true }, held, release, func(s *Server) {
		if n := int32(s.workers.slots.inUse()); n > maxSlots.Load() {
			maxSlots.Store(n)
		}
	})
	if got := len(s.SchedulerWorkers()); got != workersPerScheduler {
		t.Fatalf("%d workers for one scheduler slot, want %d", got, workersPerScheduler)
	}
	testNode(t, s, 8000, 8000)
	var evals []string
	for i := 0; i < 3; i++ {
		evals = append(evals, register(t, s, testJob(fmt.Sprintf("j%d", i), 1)).EvalID)
	}
	for i := 0; i < 3; i++ {
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			close(release)
			t.Fatalf("only %d plans reached the applier while the others waited: the slot is held during the wait", i)
		}
	}
	close(release)
	for _, id := range evals {
		if ev := evalDone(t, s, id); ev.Status != structs.EvalStatusComplete {
			t.Fatalf("eval %s: %s", id, ev.Status)
		}
	}
	if m := maxSlots.Load(); m > 1 {
		t.Fatalf("%d evaluations computed at once with one slot", m)
	}
}

// Large plans do not all wait for their commit without a slot: once the
// waiting plans hold maxWaitingPlaced allocations, the next one waits
// holding its slot, so no further evaluation is computed (and kept in
// memory) meanwhile.
func TestWorker_LargePlansWaitHoldingTheSlot(t *testing.T) {
	held := make(chan struct{}, 16)
	release := make(chan struct{})
	s := heldPlansServer(t, func(*structs.Plan) bool { return true }, held, release, nil)
	testNode(t, s, 1_000_000, 1_000_000)
	count := maxWaitingPlaced*3/5 + 1 // two plans pass the bound together
	var evals []string
	for i := 0; i < 3; i++ {
		job := testJob(fmt.Sprintf("big%d", i), count)
		job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 10, MemoryMB: 10}
		job.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{SizeMB: 10}
		evals = append(evals, register(t, s, job).EvalID)
	}
	for i := 0; i < 2; i++ {
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			close(release)
			t.Fatalf("only %d plans reached the applier", i)
		}
	}
	select {
	case <-held:
		close(release)
		t.Fatal("a third large plan was computed while two waited: the second did not keep its slot")
	case <-time.After(500 * time.Millisecond):
	}
	close(release)
	for _, id := range evals {
		if ev := evalDone(t, s, id); ev.Status != structs.EvalStatusComplete {
			t.Fatalf("eval %s: %s", id, ev.Status)
		}
	}
	if n := s.waitingPlaced.Load(); n != 0 {
		t.Fatalf("%d allocations still counted as waiting", n)
	}
}

// Workers waiting for a slot do not take evaluations out of the broker:
// with one slot held by a long evaluation, at most one more evaluation is
// dequeued (the start permit's), the rest stay ready in the broker, in its
// priority order and without nack timers running.
func TestWorker_IdleWorkersLeaveEvalsInBroker(t *testing.T) {
	held := make(chan struct{}, 1)
	release := make(chan struct{})
	s := heldPlansServer(t, func(p *structs.Plan) bool { return p.Job.ID == "big" }, held, release, nil)
	if n := len(s.SchedulerWorkers()); n < 8 {
		t.Fatalf("%d workers: the test needs idle ones", n)
	}
	testNode(t, s, 1_000_000, 1_000_000)
	big := testJob("big", maxWaitingPlaced+1) // waits for its commit holding the slot
	big.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 10, MemoryMB: 10}
	big.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{SizeMB: 10}
	evals := []string{register(t, s, big).EvalID}
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the large plan never reached the applier")
	}
	for i := 0; i < 6; i++ {
		evals = append(evals, register(t, s, testJob(fmt.Sprintf("small%d", i), 1)).EvalID)
	}
	waitFor(t, 10*time.Second, "six evaluations ready or dequeued", func() bool {
		st := s.broker.Stats()
		return st.TotalReady+st.TotalUnacked == 7
	})
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if st := s.broker.Stats(); st.TotalUnacked > 2 {
			close(release)
			t.Fatalf("%d evaluations dequeued with one slot, held by a waiting plan: idle workers took them", st.TotalUnacked)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	for _, id := range evals {
		if ev := evalDone(t, s, id); ev.Status != structs.EvalStatusComplete {
			t.Fatalf("eval %s: %s", id, ev.Status)
		}
	}
}

// heldPlansServer starts a server with one scheduler slot whose workers'
// Plan.Submit calls, for the plans hold picks, signal held and wait until
// release is closed. observe, if set, sees the server at every worker RPC.
func heldPlansServer(t *testing.T, hold func(*structs.Plan) bool, held chan<- struct{}, release <-chan struct{}, observe func(*Server)) *Server {
	t.Helper()
	var srv atomic.Pointer[Server]
	s := testServer(t, func(c *Config) {
		c.NumSchedulers = 1
		c.workerRPC = func(method string, args, reply any) error {
			s := srv.Load()
			if s == nil {
				return errors.New("test server not started yet")
			}
			if observe != nil {
				observe(s)
			}
			if method == "Plan.Submit" && hold(args.(*structs.PlanRequest).Plan) {
				held <- struct{}{}
				<-release
			}
			return s.RPC(method, args, reply)
		}
	})
	srv.Store(s)
	return s
}

// completedOnce waits for the evaluation to complete and for no evaluation
// to be left unacked, and checks the job runs exactly one allocation (a
// re-run placed nothing twice).
func completedOnce(t *testing.T, s *Server, evalID, jobID string) {
	t.Helper()
	if ev := evalDone(t, s, evalID); ev.Status != structs.EvalStatusComplete {
		t.Fatalf("eval %s: %s", evalID, ev.Status)
	}
	if n := len(liveAllocs(t, s, jobID)); n != 1 {
		t.Fatalf("%d live allocs of %s, want 1", n, jobID)
	}
	waitFor(t, 10*time.Second, "no eval left unacked", func() bool { return s.broker.Stats().TotalUnacked == 0 })
}

// statusWriteFor waits for the status write a test intercepted (its eval
// ID on held) and checks it is want's.
func statusWriteFor(t *testing.T, held <-chan string, want string) {
	t.Helper()
	select {
	case id := <-held:
		if id != want {
			t.Fatalf("status write for %s, want %s", id, want)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no status write reached the test's gate")
	}
}
