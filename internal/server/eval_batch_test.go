package server

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// Updates that arrive while an entry is being written go out together in the
// next one, and each caller returns that entry's index only once it is
// written.
func TestEvalUpdateBatcher_GroupCommit(t *testing.T) {
	type write struct {
		evals   []*structs.Evaluation
		release chan uint64
	}
	writes := make(chan *write)
	shutdown := make(chan struct{})
	defer close(shutdown)
	b := &evalUpdateBatcher{shutdown: shutdown, kick: make(chan struct{}, 1),
		write: func(evals []*structs.Evaluation) (uint64, error) {
			w := &write{evals: evals, release: make(chan uint64)}
			writes <- w
			return <-w.release, nil
		}}
	go b.run()

	type result struct {
		id  string
		idx uint64
	}
	results := make(chan result, 10)
	apply := func(id string) {
		idx, err := b.Apply([]*structs.Evaluation{{ID: id}})
		if err != nil {
			t.Error(err)
		}
		results <- result{id, idx}
	}
	go apply("first")
	w1 := <-writes
	if len(w1.evals) != 1 {
		t.Fatalf("first entry has %d evals", len(w1.evals))
	}
	const n = 5
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			apply(fmt.Sprint("e", i))
		}()
	}
	waitFor(t, 5*time.Second, "updates queued behind the entry in flight", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.pending != nil && len(b.pending.evals) == n
	})
	select {
	case r := <-results:
		t.Fatalf("%s returned before its entry was written", r.id)
	default:
	}
	w1.release <- 10
	if r := <-results; r.id != "first" || r.idx != 10 {
		t.Fatalf("first: %+v", r)
	}
	w2 := <-writes
	if len(w2.evals) != n {
		t.Fatalf("second entry has %d evals, want all %d queued", len(w2.evals), n)
	}
	w2.release <- 11
	wg.Wait()
	for i := 0; i < n; i++ {
		if r := <-results; r.idx != 11 {
			t.Fatalf("%s got index %d, want 11", r.id, r.idx)
		}
	}
}

// A terminal status update (a worker's background completion) waits up to
// the linger for a plan entry to ride in, then is written on its own; an
// update someone waits on (not terminal) is written at once and takes the
// waiting completions with it.
func TestEvalUpdateBatcher_CompletionsLinger(t *testing.T) {
	writes := make(chan []*structs.Evaluation, 4)
	shutdown := make(chan struct{})
	defer func() { close(shutdown) }()
	b := &evalUpdateBatcher{shutdown: shutdown, kick: make(chan struct{}, 1), linger: 200 * time.Millisecond,
		write: func(evals []*structs.Evaluation) (uint64, error) {
			writes <- evals
			return 7, nil
		}}
	go b.run()

	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := b.Apply([]*structs.Evaluation{{ID: "c1", Status: structs.EvalStatusComplete}})
		done <- err
	}()
	select {
	case w := <-writes:
		if elapsed := time.Since(start); elapsed < 150*time.Millisecond {
			t.Fatalf("completion written after %v, before its linger", elapsed)
		}
		if len(w) != 1 || w[0].ID != "c1" {
			t.Fatalf("write: %v", w)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("completion never written on its own")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Completion queued, then an urgent update: one entry with both, at
	// once. A batcher with a long linger, so "at once" (well under a
	// second, allowing for a loaded machine) is far from "after the
	// linger" (it was 150 ms against 200 ms).
	close(shutdown)
	shutdown = make(chan struct{})
	b = &evalUpdateBatcher{shutdown: shutdown, kick: make(chan struct{}, 1), linger: 30 * time.Second,
		write: func(evals []*structs.Evaluation) (uint64, error) {
			writes <- evals
			return 7, nil
		}}
	go b.run()
	go func() {
		_, err := b.Apply([]*structs.Evaluation{{ID: "c2", Status: structs.EvalStatusComplete}})
		done <- err
	}()
	waitFor(t, 5*time.Second, "c2 queued", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.pending != nil
	})
	start = time.Now()
	if _, err := b.Apply([]*structs.Evaluation{{ID: "blocked", Status: structs.EvalStatusBlocked}}); err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Fatalf("urgent update waited %v (the linger is 30 s)", elapsed)
	}
	if w := <-writes; len(w) != 2 {
		t.Fatalf("entry carries %d evals, want the completion and the urgent update", len(w))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
