package server

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// evalLedger counts, per evaluation, what the workers did with it.
type evalLedger struct {
	mu        sync.Mutex
	delivered map[string]int
	acked     map[string]int
	nacked    map[string]int
}

func newEvalLedger() *evalLedger {
	return &evalLedger{delivered: map[string]int{}, acked: map[string]int{}, nacked: map[string]int{}}
}

// rpc wraps a worker RPC, recording dequeues, acks and nacks.
func (l *evalLedger) rpc(srv *atomic.Pointer[Server], before func(method string, args any)) func(string, any, any) error {
	return func(method string, args, reply any) error {
		s := srv.Load()
		if s == nil {
			return errors.New("test server not started yet")
		}
		if before != nil {
			before(method, args)
		}
		err := s.RPC(method, args, reply)
		l.mu.Lock()
		defer l.mu.Unlock()
		switch method {
		case "Eval.Dequeue":
			if r := reply.(*structs.EvalDequeueResponse); err == nil && r.Eval != nil {
				l.delivered[r.Eval.ID]++
			}
		case "Eval.Ack":
			if err == nil {
				l.acked[args.(*structs.EvalAckRequest).EvalID]++
			}
		case "Eval.Nack":
			l.nacked[args.(*structs.EvalAckRequest).EvalID]++
		}
		return err
	}
}

// exactlyOnce checks each evaluation was handed out once and acked once.
func (l *evalLedger) exactlyOnce(t *testing.T, ids []string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		if d, a, n := l.delivered[id], l.acked[id], l.nacked[id]; d != 1 || a != 1 || n != 0 {
			t.Errorf("eval %s: delivered %d, acked %d, nacked %d times; want 1, 1, 0", id, d, a, n)
		}
	}
}

func setWorkers(t *testing.T, s *Server, num int, enabled ...string) {
	t.Helper()
	if len(enabled) == 0 {
		enabled = s.SchedulerWorkerConfig().EnabledSchedulers
	}
	got, err := s.SetSchedulerWorkerConfig(SchedulerWorkerConfig{NumSchedulers: num, EnabledSchedulers: enabled})
	if err != nil {
		t.Fatal(err)
	}
	if got.NumSchedulers != num {
		t.Fatalf("num_schedulers %d after setting %d", got.NumSchedulers, num)
	}
}

// workerStates counts the listed workers by "Status/WorkloadStatus".
func workerStates(s *Server) map[string]int {
	out := map[string]int{}
	for _, w := range s.SchedulerWorkers() {
		out[w.Status+"/"+w.WorkloadStatus]++
	}
	return out
}

// The pool is resized up, down and to zero over and over while jobs are
// registered and their plans are slow to commit: every evaluation is still
// handed out once, acked once and places its allocations once, and the
// pool settles at the last size with no worker left stopping.
func TestWorkerPool_ResizeWhileEvalsFlow(t *testing.T) {
	ledger := newEvalLedger()
	var srv atomic.Pointer[Server]
	var plans atomic.Int64
	s := testServer(t, func(c *Config) {
		c.NumSchedulers = 2
		c.workerRPC = ledger.rpc(&srv, func(method string, _ any) {
			// Every third plan commits slowly, so resizes land while
			// workers wait for commits without their slot.
			if method == "Plan.Submit" && plans.Add(1)%3 == 0 {
				time.Sleep(15 * time.Millisecond)
			}
		})
	})
	srv.Store(s)
	testNode(t, s, 1_000_000, 1_000_000)

	// Jobs arrive over time while the pool is resized every few
	// milliseconds, to zero among others, until every evaluation is done.
	const jobs = 80
	evals := make([]string, jobs)
	registered := make(chan struct{})
	go func() {
		defer close(registered)
		for i := range evals {
			var resp structs.JobRegisterResponse
			if err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: testJob(fmt.Sprintf("j%d", i), 2)}, &resp); err != nil {
				t.Error(err)
				return
			}
			evals[i] = resp.EvalID
			time.Sleep(time.Millisecond) // paces the arrivals; nothing waits on it
		}
	}()
	allDone := func() bool {
		select {
		case <-registered:
		default:
			return false
		}
		if t.Failed() {
			return true
		}
		for _, id := range evals {
			if ev, _ := s.State().EvalByID(nil, id); ev == nil || !ev.TerminalStatus() {
				return false
			}
		}
		return true
	}
	sizes := []int{0, 3, 1, 0, 4, 1, 2, 0, 5}
	resizes := 0
	deadline := time.Now().Add(30 * time.Second)
	for !allDone() {
		if time.Now().After(deadline) {
			t.Fatal("evaluations still running after 30 s of resizing")
		}
		if _, err := s.SetSchedulerWorkerConfig(SchedulerWorkerConfig{NumSchedulers: sizes[resizes%len(sizes)],
			EnabledSchedulers: []string{"service", "batch"}}); err != nil {
			t.Fatal(err)
		}
		resizes++
		time.Sleep(5 * time.Millisecond) // the pace of resizes; nothing waits on it
	}
	if t.Failed() {
		return
	}
	if resizes < 10 {
		t.Fatalf("only %d resizes while evaluations ran: the test did not exercise resizing", resizes)
	}
	t.Logf("%d resizes while %d evaluations ran", resizes, jobs)
	setWorkers(t, s, 2)

	for i, id := range evals {
		if ev := evalDone(t, s, id); ev.Status != structs.EvalStatusComplete {
			t.Fatalf("eval %s: %s", id, ev.Status)
		}
		if n := len(liveAllocs(t, s, fmt.Sprintf("j%d", i))); n != 2 {
			t.Fatalf("job j%d runs %d allocations, want 2", i, n)
		}
	}
	waitFor(t, 10*time.Second, "no eval left unacked", func() bool { return s.broker.Stats().TotalUnacked == 0 })
	ledger.exactlyOnce(t, evals)
	waitFor(t, 10*time.Second, "retired workers gone", func() bool {
		ws := s.SchedulerWorkers()
		for _, w := range ws {
			if w.Status != "Started" {
				return false
			}
		}
		return len(ws) == 2*workersPerScheduler
	})
	if n := s.workers.slots.inUse(); n != 0 {
		t.Fatalf("%d scheduler slots held with nothing to schedule", n)
	}
}

// Pausing the pool (num_schedulers = 0) while a plan waits for its commit
// does not strand that evaluation: its worker, retired and listed as
// "Stopping", takes a slot again and finishes it. Nothing new is dequeued
// while paused; evaluations wait ready in the broker and run once the pool
// is resumed.
func TestWorkerPool_PauseFinishesInFlightEvals(t *testing.T) {
	held := make(chan struct{}, 1)
	release := make(chan struct{})
	s := heldPlansServer(t, func(p *structs.Plan) bool { return p.Job.ID == "a" }, held, release, nil)
	testNode(t, s, 8000, 8000)
	a := register(t, s, testJob("a", 1))
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("job a's plan never reached the applier")
	}
	if st := workerStates(s); st["Started/Submitting"] != 1 {
		close(release)
		t.Fatalf("worker states with a plan waiting: %v", st)
	}

	setWorkers(t, s, 0)
	// The idle workers leave at once; the one waiting for its commit
	// stays, marked as stopping.
	waitFor(t, 5*time.Second, "idle workers retired", func() bool {
		st := workerStates(s)
		return len(s.SchedulerWorkers()) == 1 && st["Stopping/Submitting"] == 1
	})
	b := register(t, s, testJob("b", 1))
	close(release)
	if ev := evalDone(t, s, a.EvalID); ev.Status != structs.EvalStatusComplete {
		t.Fatalf("eval a: %s", ev.Status)
	}
	waitFor(t, 5*time.Second, "the last worker gone", func() bool { return len(s.SchedulerWorkers()) == 0 })
	// Paused: b stays ready in the broker, dequeued by no one.
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		if st := s.broker.Stats(); st.TotalReady != 1 || st.TotalUnacked != 0 {
			t.Fatalf("while paused: %d ready, %d unacked; want b ready and nothing dequeued", st.TotalReady, st.TotalUnacked)
		}
		time.Sleep(10 * time.Millisecond)
	}

	setWorkers(t, s, 1)
	completedOnce(t, s, b.EvalID, "b")
	if n := len(s.SchedulerWorkers()); n != workersPerScheduler {
		t.Fatalf("%d workers after resuming with one slot, want %d", n, workersPerScheduler)
	}
}

// A worker retired while it holds an evaluation it has not started (it
// waits for the only slot) keeps it: the evaluation is computed once the
// slot frees, even though the pool is paused, and is never nacked.
func TestWorkerPool_RetiredWorkerKeepsItsEval(t *testing.T) {
	ledger := newEvalLedger()
	var srv atomic.Pointer[Server]
	held := make(chan struct{}, 1)
	release := make(chan struct{})
	s := testServer(t, func(c *Config) {
		c.NumSchedulers = 1
		c.workerRPC = ledger.rpc(&srv, func(method string, args any) {
			if method == "Plan.Submit" && args.(*structs.PlanRequest).Plan.Job.ID == "big" {
				held <- struct{}{}
				<-release
			}
		})
	})
	srv.Store(s)
	testNode(t, s, 1_000_000, 1_000_000)
	big := testJob("big", maxWaitingPlaced+1) // waits for its commit holding the slot
	big.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 10, MemoryMB: 10}
	big.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{SizeMB: 10}
	a := register(t, s, big)
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the large plan never reached the applier")
	}
	b := register(t, s, testJob("b", 1))
	waitFor(t, 10*time.Second, "b dequeued, waiting for the slot", func() bool {
		return workerStates(s)["Started/WaitingForSlot"] == 1
	})

	setWorkers(t, s, 0)
	close(release)
	for _, id := range []string{a.EvalID, b.EvalID} {
		if ev := evalDone(t, s, id); ev.Status != structs.EvalStatusComplete {
			t.Fatalf("eval %s: %s", id, ev.Status)
		}
	}
	waitFor(t, 10*time.Second, "no eval left unacked", func() bool { return s.broker.Stats().TotalUnacked == 0 })
	waitFor(t, 5*time.Second, "every worker gone", func() bool { return len(s.SchedulerWorkers()) == 0 })
	ledger.exactlyOnce(t, []string{a.EvalID, b.EvalID})
}

// enabled_schedulers decides which evaluation types the workers dequeue,
// and a change applies without a restart.
func TestWorkerPool_EnabledSchedulersChangeAtRuntime(t *testing.T) {
	s := testServer(t, func(c *Config) {
		c.NumSchedulers = 1
		c.EnabledSchedulers = []string{structs.JobTypeBatch}
	})
	testNode(t, s, 8000, 8000)
	svc := register(t, s, testJob("svc", 1))
	deadline := time.Now().Add(1500 * time.Millisecond) // beyond one dequeue timeout
	for time.Now().Before(deadline) {
		if st := s.broker.Stats(); st.TotalReady != 1 || st.TotalUnacked != 0 {
			t.Fatalf("service eval with only batch enabled: %d ready, %d unacked", st.TotalReady, st.TotalUnacked)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, w := range s.SchedulerWorkers() {
		if strings.Join(w.EnabledSchedulers, ",") != "batch" {
			t.Fatalf("worker %s lists %v", w.ID, w.EnabledSchedulers)
		}
	}

	setWorkers(t, s, 1, "_core", "batch", "service", "batch")
	completedOnce(t, s, svc.EvalID, "svc")
	if got := s.SchedulerWorkerConfig().EnabledSchedulers; strings.Join(got, ",") != "_core,batch,service" {
		t.Fatalf("enabled schedulers %v: duplicates kept or order lost", got)
	}
}

// A bad configuration is refused with a 400 naming the field, and changes
// nothing.
func TestWorkerPool_BadConfigRefused(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 1 })
	before := s.SchedulerWorkerConfig()
	for _, tc := range []struct {
		cfg  SchedulerWorkerConfig
		want string
	}{
		{SchedulerWorkerConfig{NumSchedulers: -1, EnabledSchedulers: []string{"service"}}, "num_schedulers"},
		{SchedulerWorkerConfig{NumSchedulers: maxNumSchedulers + 1, EnabledSchedulers: []string{"service"}}, "num_schedulers"},
		{SchedulerWorkerConfig{NumSchedulers: 1}, "enabled_schedulers"},
		{SchedulerWorkerConfig{NumSchedulers: 1, EnabledSchedulers: []string{"service", "gpu"}}, `unknown scheduler "gpu"`},
	} {
		_, err := s.SetSchedulerWorkerConfig(tc.cfg)
		if code, msg := structs.ErrorCode(err); err == nil || code != 400 || !strings.Contains(msg, tc.want) {
			t.Errorf("%+v: %v (code %d), want a 400 naming %s", tc.cfg, err, code, tc.want)
		}
	}
	after := s.SchedulerWorkerConfig()
	if after.NumSchedulers != before.NumSchedulers || strings.Join(after.EnabledSchedulers, ",") != strings.Join(before.EnabledSchedulers, ",") {
		t.Fatalf("a refused configuration changed the pool: %+v -> %+v", before, after)
	}
}

// Lowering a semaphore's bound takes no token back and admits no one until
// the holders are below it; a waiter that gives up holds nothing.
func TestResizableSem_ShrinkAndCancel(t *testing.T) {
	s := newResizableSem(2)
	never := make(chan struct{})
	s.take(never, nil)
	s.take(never, nil)
	s.setLimit(1)
	got := make(chan bool, 1)
	go func() { got <- s.take(never, nil) }()
	s.give() // one held, bound one: the waiter still waits
	select {
	case <-got:
		t.Fatal("a token was granted above the lowered bound")
	case <-time.After(50 * time.Millisecond):
	}
	s.give()
	if !<-got {
		t.Fatal("the waiter was refused")
	}

	cancel := make(chan struct{})
	go func() { got <- s.take(cancel, nil) }()
	waitFor(t, 5*time.Second, "a second waiter", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.waiters) == 1
	})
	close(cancel)
	if <-got {
		t.Fatal("a cancelled take reported a token")
	}
	if n := s.inUse(); n != 1 {
		t.Fatalf("%d tokens held, want 1", n)
	}
	s.setLimit(0)
	s.give()
	if s.take(cancel, nil) {
		t.Fatal("a token taken with a bound of zero")
	}
}
