package evalbroker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/server/clock"
	"github.com/drover-project/drover/internal/structs"
)

func eval(id, job string, prio int, createIndex uint64) *structs.Evaluation {
	return &structs.Evaluation{
		ID: id, Namespace: "default", JobID: job, Priority: prio, Type: structs.JobTypeService,
		Status: structs.EvalStatusPending, CreateIndex: createIndex, ModifyIndex: createIndex,
	}
}

func newFake(t *testing.T) (*Broker, *clock.Fake) {
	t.Helper()
	fc := clock.NewFake(time.Unix(1_000_000, 0))
	cfg := DefaultConfig()
	cfg.Clock = fc
	b := New(cfg)
	b.SetEnabled(true)
	t.Cleanup(func() { b.SetEnabled(false) })
	return b, fc
}

// eventually polls cond until it holds or a deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second) // bounds a hang only: the race step runs on 2 loaded cores
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// mustDequeue dequeues an eval that must already be ready.
func mustDequeue(t *testing.T, b *Broker, scheds ...string) (*structs.Evaluation, string) {
	t.Helper()
	if len(scheds) == 0 {
		scheds = []string{structs.JobTypeService}
	}
	type res struct {
		e     *structs.Evaluation
		token string
		err   error
	}
	ch := make(chan res, 1)
	go func() {
		e, tok, err := b.Dequeue(scheds, 0)
		ch <- res{e, tok, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil || r.e == nil || r.token == "" {
			t.Fatalf("dequeue: %v %q %v", r.e, r.token, r.err)
		}
		return r.e, r.token
	case <-time.After(5 * time.Second):
		t.Fatalf("nothing to dequeue from %v; stats %+v", scheds, b.Stats())
	}
	return nil, ""
}

func TestOneEvalPerJobAndAckPromotes(t *testing.T) {
	b, _ := newFake(t)
	b.Enqueue(eval("e1", "web", 50, 1))
	b.Enqueue(eval("e2", "web", 50, 2))
	b.Enqueue(eval("e3", "web", 50, 3))
	b.Enqueue(eval("e1", "web", 50, 1)) // duplicate ID is ignored
	b.Enqueue(eval("o1", "other", 50, 4))

	s := b.Stats()
	if s.TotalReady != 2 || s.TotalPending != 2 {
		t.Fatalf("stats = %+v, want 2 ready (one per job), 2 pending", s)
	}
	e, tok := mustDequeue(t, b)
	if e.ID != "e1" {
		t.Fatalf("first = %s, want e1", e.ID)
	}
	o, otok := mustDequeue(t, b)
	if o.ID != "o1" {
		t.Fatalf("second = %s, want o1 (web is in flight)", o.ID)
	}
	if s := b.Stats(); s.TotalReady != 0 || s.TotalUnacked != 2 {
		t.Fatalf("while web in flight: %+v", s)
	}
	if err := b.Ack(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	// The newest pending eval is promoted; the older one is obsolete.
	next, ntok := mustDequeue(t, b)
	if next.ID != "e3" {
		t.Fatalf("promoted %s, want newest e3", next.ID)
	}
	c := b.Cancelable(10)
	if len(c) != 1 || c[0].ID != "e2" {
		t.Fatalf("cancelable = %v, want [e2]", c)
	}
	if len(b.Cancelable(10)) != 0 {
		t.Fatal("Cancelable must remove what it returns")
	}
	if err := b.Ack(next.ID, ntok); err != nil {
		t.Fatal(err)
	}
	if err := b.Ack(o.ID, otok); err != nil {
		t.Fatal(err)
	}
	if err := b.Ack(o.ID, otok); !errors.Is(err, ErrNotOutstanding) {
		t.Fatalf("double ack err = %v", err)
	}
	if s := b.Stats(); s.TotalReady+s.TotalPending+s.TotalUnacked != 0 {
		t.Fatalf("broker not empty: %+v", s)
	}
}

func TestPriorityAcrossSchedulersThenCreateIndex(t *testing.T) {
	b, _ := newFake(t)
	mk := func(id string, typ string, prio int, ci uint64) *structs.Evaluation {
		e := eval(id, id, prio, ci)
		e.Type = typ
		return e
	}
	b.Enqueue(mk("s-50-5", structs.JobTypeService, 50, 5))
	b.Enqueue(mk("b-50-3", structs.JobTypeBatch, 50, 3))
	b.Enqueue(mk("b-90-9", structs.JobTypeBatch, 90, 9))
	b.Enqueue(mk("s-50-1", structs.JobTypeService, 50, 1))
	b.Enqueue(mk("sys-99", structs.JobTypeSystem, 99, 1)) // not requested
	var got []string
	for i := 0; i < 4; i++ {
		e, _ := mustDequeue(t, b, structs.JobTypeService, structs.JobTypeBatch)
		got = append(got, e.ID)
	}
	want := fmt.Sprint([]string{"b-90-9", "s-50-1", "b-50-3", "s-50-5"})
	if fmt.Sprint(got) != want {
		t.Fatalf("order = %v, want %v", got, want)
	}
	if s := b.Stats(); s.ByScheduler[structs.JobTypeSystem].Ready != 1 || s.ByScheduler[structs.JobTypeService].Unacked != 2 {
		t.Fatalf("by scheduler = %+v", s.ByScheduler)
	}
}

func TestDequeueTimeoutReturnsNil(t *testing.T) {
	b := New(Config{})
	b.SetEnabled(true)
	defer b.SetEnabled(false)
	e, tok, err := b.Dequeue([]string{structs.JobTypeService}, 10*time.Millisecond)
	if e != nil || tok != "" || err != nil {
		t.Fatalf("timeout: %v %q %v", e, tok, err)
	}
}

func TestNackDelaysThenFailedQueue(t *testing.T) {
	b, fc := newFake(t)
	b.Enqueue(eval("e1", "web", 50, 1))
	b.Enqueue(eval("e2", "web", 50, 2)) // pending behind e1 the whole time

	e, tok := mustDequeue(t, b)
	if err := b.Nack(e.ID, "wrong"); !errors.Is(err, ErrTokenMismatch) {
		t.Fatalf("wrong token err = %v", err)
	}
	if err := b.Nack(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	// After 1 delivery: InitialNackDelay (1s).
	if s := b.Stats(); s.TotalWaiting != 1 || s.TotalReady != 0 {
		t.Fatalf("after first nack: %+v", s)
	}
	fc.Advance(999 * time.Millisecond)
	if b.Stats().TotalReady != 0 {
		t.Fatal("released before InitialNackDelay")
	}
	fc.Advance(time.Millisecond)
	if b.Stats().TotalReady != 1 {
		t.Fatalf("not released after InitialNackDelay: %+v", b.Stats())
	}
	e, tok = mustDequeue(t, b)
	if e.ID != "e1" {
		t.Fatalf("redelivered %s, want e1 (job slot kept across nack)", e.ID)
	}
	if err := b.Nack(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	// After 2 deliveries: (2-1)*SubsequentNackDelay = 20s.
	fc.Advance(19 * time.Second)
	if b.Stats().TotalReady != 0 {
		t.Fatal("released before subsequent delay")
	}
	fc.Advance(time.Second)
	e, tok = mustDequeue(t, b)
	if err := b.Nack(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	// Third delivery reached the limit: failed queue, job slot still held.
	s := b.Stats()
	if s.TotalFailed != 1 || s.TotalReady != 0 || s.TotalPending != 1 {
		t.Fatalf("after delivery limit: %+v", s)
	}
	f, ftok, err := b.DequeueFailed(time.Second)
	if err != nil || f == nil || f.ID != "e1" {
		t.Fatalf("DequeueFailed = %v %v", f, err)
	}
	if err := b.Ack(f.ID, ftok); err != nil {
		t.Fatal(err)
	}
	next, _ := mustDequeue(t, b)
	if next.ID != "e2" {
		t.Fatalf("after failed ack promoted %s, want e2", next.ID)
	}
}

func TestNackTimeoutFires(t *testing.T) {
	b, fc := newFake(t)
	b.Enqueue(eval("e1", "web", 50, 1))
	e, tok := mustDequeue(t, b)
	fc.Advance(59 * time.Second)
	if _, ok := b.Outstanding(e.ID); !ok {
		t.Fatal("nacked before NackTimeout")
	}
	fc.Advance(time.Second)
	if _, ok := b.Outstanding(e.ID); ok {
		t.Fatal("still outstanding after NackTimeout")
	}
	if err := b.Ack(e.ID, tok); !errors.Is(err, ErrNotOutstanding) {
		t.Fatalf("ack after timeout err = %v", err)
	}
	fc.Advance(time.Second) // InitialNackDelay
	e2, _ := mustDequeue(t, b)
	if e2.ID != "e1" {
		t.Fatalf("got %s", e2.ID)
	}
}

func TestOutstandingResetAndPauseResume(t *testing.T) {
	b, fc := newFake(t)
	b.Enqueue(eval("e1", "web", 50, 1))
	e, tok := mustDequeue(t, b)

	fc.Advance(50 * time.Second)
	if err := b.OutstandingReset(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	fc.Advance(50 * time.Second) // 100s since dequeue, 50s since reset
	if got, ok := b.Outstanding(e.ID); !ok || got != tok {
		t.Fatal("OutstandingReset did not restart the nack timeout")
	}

	if err := b.PauseNackTimeout(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	if err := b.OutstandingReset(e.ID, tok); err != nil { // stays paused
		t.Fatal(err)
	}
	fc.Advance(10 * time.Minute)
	if _, ok := b.Outstanding(e.ID); !ok {
		t.Fatal("nack timeout fired while paused")
	}
	if err := b.ResumeNackTimeout(e.ID, tok); err != nil {
		t.Fatal(err)
	}
	fc.Advance(59 * time.Second)
	if _, ok := b.Outstanding(e.ID); !ok {
		t.Fatal("resume must restart a full NackTimeout")
	}
	fc.Advance(time.Second)
	if _, ok := b.Outstanding(e.ID); ok {
		t.Fatal("nack timeout did not fire after resume")
	}
	if err := b.PauseNackTimeout(e.ID, tok); !errors.Is(err, ErrNotOutstanding) {
		t.Fatalf("pause of a nacked eval err = %v", err)
	}
}

func TestWaitAndWaitUntil(t *testing.T) {
	b, fc := newFake(t)
	w := eval("wait", "a", 50, 1)
	w.Wait = 5 * time.Second
	u := eval("until", "b", 50, 2)
	u.WaitUntil = fc.Now().Add(10 * time.Second)
	b.Enqueue(w)
	b.Enqueue(u)
	if s := b.Stats(); s.TotalWaiting != 2 || s.TotalReady != 0 {
		t.Fatalf("stats = %+v", s)
	}
	// Wait for the delay goroutine to arm its timer (1 Wait timer + 1 delay timer).
	eventually(t, "delay timer armed", func() bool { return fc.Pending() == 2 })
	fc.Advance(5 * time.Second)
	if e, tok := mustDequeue(t, b); e.ID != "wait" || b.Ack(e.ID, tok) != nil {
		t.Fatalf("got %s", e.ID)
	}
	fc.Advance(4 * time.Second)
	if b.Stats().TotalReady != 0 {
		t.Fatal("WaitUntil eval released early")
	}
	fc.Advance(time.Second)
	eventually(t, "WaitUntil release", func() bool { return b.Stats().TotalReady == 1 })
	if e, tok := mustDequeue(t, b); e.ID != "until" || b.Ack(e.ID, tok) != nil {
		t.Fatalf("got %s", e.ID)
	}

	// DropWaiting forgets a held eval.
	d := eval("drop", "c", 50, 3)
	d.WaitUntil = fc.Now().Add(time.Minute)
	b.Enqueue(d)
	b.DropWaiting("drop")
	fc.Advance(time.Hour)
	if s := b.Stats(); s.TotalWaiting != 0 || s.TotalReady != 0 {
		t.Fatalf("after DropWaiting: %+v", s)
	}
}

func TestEnqueueAllRequeuesOnAck(t *testing.T) {
	b, _ := newFake(t)
	e := eval("e1", "web", 50, 1)
	b.Enqueue(e)
	got, tok := mustDequeue(t, b)
	// Blocked evals hands the same eval back while it is still outstanding.
	b.EnqueueAll(map[*structs.Evaluation]string{got: tok})
	if s := b.Stats(); s.TotalReady != 0 {
		t.Fatalf("requeued before ack: %+v", s)
	}
	if err := b.Ack(got.ID, tok); err != nil {
		t.Fatal(err)
	}
	again, tok2 := mustDequeue(t, b)
	if again.ID != "e1" || tok2 == tok {
		t.Fatalf("requeue: %s %q", again.ID, tok2)
	}
	// A requeue is dropped on nack (the nack itself re-enqueues).
	b.EnqueueAll(map[*structs.Evaluation]string{again: tok2})
	if err := b.Nack(again.ID, tok2); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	n := len(b.requeue)
	b.mu.Unlock()
	if n != 0 {
		t.Fatal("requeue kept after nack")
	}
}

func TestDisableFlushesAndWakesDequeue(t *testing.T) {
	b, _ := newFake(t)
	errCh := make(chan error, 1)
	go func() {
		_, _, err := b.Dequeue([]string{structs.JobTypeBatch}, 0)
		errCh <- err
	}()
	b.Enqueue(eval("e1", "web", 50, 1))
	b.Enqueue(eval("e2", "web", 50, 2))
	w := eval("w", "x", 50, 3)
	w.Wait = time.Minute
	b.Enqueue(w)
	e, tok := mustDequeue(t, b)

	b.SetEnabled(false)
	select {
	case err := <-errCh:
		if !errors.Is(err, ErrDisabled) {
			t.Fatalf("blocked Dequeue err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("disable did not wake a blocked Dequeue")
	}
	if err := b.Ack(e.ID, tok); !errors.Is(err, ErrDisabled) {
		t.Fatalf("ack while disabled err = %v", err)
	}
	b.Enqueue(eval("ignored", "y", 50, 9))
	b.SetEnabled(true)
	s := b.Stats()
	if s.TotalReady+s.TotalPending+s.TotalUnacked+s.TotalWaiting+s.TotalFailed != 0 {
		t.Fatalf("re-enabled broker not empty: %+v", s)
	}
	// The same eval IDs can be restored on the new term.
	b.Enqueue(eval("e1", "web", 50, 1))
	if got, _ := mustDequeue(t, b); got.ID != "e1" {
		t.Fatalf("got %s", got.ID)
	}
}

// Many producers and consumers; consumers nack some first deliveries. Every
// eval must end acked exactly once or canceled exactly once, and no two evals
// of one job may ever be outstanding together.
func TestConcurrentStress(t *testing.T) {
	b := New(Config{InitialNackDelay: time.Millisecond, SubsequentNackDelay: time.Millisecond, DeliveryLimit: 10})
	b.SetEnabled(true)
	defer b.SetEnabled(false)

	const producers, perProducer, consumers, jobs = 4, 250, 6, 17
	total := producers * perProducer
	var (
		mu       sync.Mutex
		acked    = map[string]int{}
		canceled = map[string]int{}
		inFlight = map[string]string{} // job → eval
		nacked   = map[string]bool{}
		failures []string
	)
	var done atomic.Int64
	var idx atomic.Uint64
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perProducer; i++ {
				n := idx.Add(1)
				e := eval(fmt.Sprintf("e-%d", n), fmt.Sprintf("job-%d", n%jobs), int(n%3)*10+40, n)
				if n%2 == 0 {
					e.Type = structs.JobTypeBatch
				}
				b.Enqueue(e)
			}
		}()
	}
	stop := make(chan struct{})
	var cwg sync.WaitGroup
	for c := 0; c < consumers; c++ {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				e, tok, err := b.Dequeue([]string{structs.JobTypeService, structs.JobTypeBatch}, 20*time.Millisecond)
				if err != nil || e == nil {
					continue
				}
				mu.Lock()
				if other, ok := inFlight[e.JobID]; ok {
					failures = append(failures, fmt.Sprintf("%s and %s of %s in flight together", other, e.ID, e.JobID))
				}
				inFlight[e.JobID] = e.ID
				nack := !nacked[e.ID] && r.IntN(4) == 0
				if nack {
					nacked[e.ID] = true
				}
				mu.Unlock()
				// "Process" the eval: give other consumers a chance to
				// dequeue a second eval of this job if the broker allowed it.
				for i := 0; i < 3; i++ {
					runtime.Gosched()
				}
				mu.Lock()
				delete(inFlight, e.JobID)
				mu.Unlock()
				if nack {
					if err := b.Nack(e.ID, tok); err != nil {
						t.Errorf("nack: %v", err)
					}
					continue
				}
				mu.Lock()
				acked[e.ID]++
				mu.Unlock()
				if err := b.Ack(e.ID, tok); err != nil {
					t.Errorf("ack: %v", err)
				}
				done.Add(1)
			}
		}()
	}
	cwg.Add(1)
	go func() { // reaper of cancelable evals
		defer cwg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			c := b.Cancelable(100)
			mu.Lock()
			for _, e := range c {
				canceled[e.ID]++
			}
			mu.Unlock()
			done.Add(int64(len(c)))
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	eventually(t, "all evals acked or canceled", func() bool { return done.Load() >= int64(total) })
	close(stop)
	cwg.Wait()

	mu.Lock()
	defer mu.Unlock()
	for _, f := range failures {
		t.Error(f)
	}
	for i := 1; i <= total; i++ {
		id := fmt.Sprintf("e-%d", i)
		if acked[id]+canceled[id] != 1 {
			t.Errorf("%s acked %d times, canceled %d times", id, acked[id], canceled[id])
		}
	}
	if s := b.Stats(); s.TotalReady+s.TotalPending+s.TotalUnacked+s.TotalWaiting != 0 {
		t.Errorf("broker not drained: %+v", s)
	}
}
