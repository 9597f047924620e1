package planqueue

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

func plan(id string, prio int) *structs.Plan { return &structs.Plan{EvalID: id, Priority: prio} }

func TestPriorityThenFIFO(t *testing.T) {
	q := New()
	q.SetEnabled(true)
	for _, p := range []*structs.Plan{plan("a", 50), plan("b", 80), plan("c", 50), plan("d", 80)} {
		if _, err := q.Enqueue(p); err != nil {
			t.Fatal(err)
		}
	}
	if d := q.Stats().Depth; d != 4 {
		t.Fatalf("depth = %d, want 4", d)
	}
	var got []string
	for i := 0; i < 4; i++ {
		p, err := q.Dequeue(time.Second)
		if err != nil || p == nil {
			t.Fatalf("dequeue %d: %v %v", i, p, err)
		}
		got = append(got, p.Plan.EvalID)
	}
	want := []string{"b", "d", "a", "c"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order = %v, want %v", got, want)
		}
	}
}

func TestRespondReachesWaiter(t *testing.T) {
	q := New()
	q.SetEnabled(true)
	pp, err := q.Enqueue(plan("a", 50))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := q.Dequeue(time.Second)
	want := &structs.PlanResult{AllocIndex: 42}
	p.Respond(want, nil)
	p.Respond(nil, errors.New("second respond is ignored"))
	got, err := pp.Wait()
	if err != nil || got != want {
		t.Fatalf("Wait = %v, %v", got, err)
	}
}

func TestDequeueTimeoutAndDisabled(t *testing.T) {
	q := New()
	if _, err := q.Enqueue(plan("a", 1)); !errors.Is(err, ErrDisabled) {
		t.Fatalf("enqueue on disabled queue: err = %v", err)
	}
	q.SetEnabled(true)
	p, err := q.Dequeue(10 * time.Millisecond)
	if p != nil || err != nil {
		t.Fatalf("timeout: got %v, %v; want nil, nil", p, err)
	}
}

func TestDisableFailsWaitersAndWakesDequeue(t *testing.T) {
	q := New()
	q.SetEnabled(true)
	var pps []PendingPlan
	for i := 0; i < 3; i++ {
		pp, err := q.Enqueue(plan("p", i))
		if err != nil {
			t.Fatal(err)
		}
		pps = append(pps, pp)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(pps))
	for i, pp := range pps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = pp.Wait()
		}()
	}
	q2 := New()
	q2.SetEnabled(true)
	deqErr := make(chan error, 1)
	go func() {
		_, err := q2.Dequeue(0)
		deqErr <- err
	}()

	q.SetEnabled(false)
	q2.SetEnabled(false)
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, ErrDisabled) {
			t.Fatalf("waiter %d: err = %v, want ErrDisabled", i, err)
		}
	}
	select {
	case err := <-deqErr:
		if !errors.Is(err, ErrDisabled) {
			t.Fatalf("dequeue err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Dequeue was not woken by disable")
	}
	if q.Stats().Depth != 0 {
		t.Fatal("disable must flush the queue")
	}
	// Enabling again starts empty.
	q.SetEnabled(true)
	if p, err := q.Dequeue(time.Millisecond); p != nil || err != nil {
		t.Fatalf("re-enabled queue not empty: %v %v", p, err)
	}
}

func TestTryDequeue(t *testing.T) {
	q := New()
	if _, err := q.TryDequeue(); err != ErrDisabled {
		t.Fatalf("disabled queue: err = %v", err)
	}
	q.SetEnabled(true)
	if p, err := q.TryDequeue(); p != nil || err != nil {
		t.Fatalf("empty queue: %v, %v", p, err)
	}
	if _, err := q.Enqueue(&structs.Plan{EvalID: "low", Priority: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(&structs.Plan{EvalID: "high", Priority: 90}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"high", "low"} {
		p, err := q.TryDequeue()
		if err != nil || p == nil || p.Plan.EvalID != want {
			t.Fatalf("want %s, got %+v, %v", want, p, err)
		}
	}
}
