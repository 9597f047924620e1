package cpuset

import (
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"
)

// recompute is the shared set worked out from scratch: usable less the
// union of every allocation's cores (all of usable when nothing is left).
func recompute(usable Set, allocs map[string]Set) Set {
	held := Set{}
	for _, s := range allocs {
		held = held.Union(s)
	}
	s := usable.Difference(held)
	if s.Empty() {
		return usable
	}
	return s
}

func TestSharedSetIsUsableLessReserved(t *testing.T) {
	m := NewManager(New(0, 1, 2, 3), nil)
	var got []string
	untrack := m.Track("a/t", m.Shared(), func(s Set) error { got = append(got, s.String()); return nil })
	defer untrack()
	if len(got) != 0 {
		t.Fatalf("a task started on the current set was moved: %v", got)
	}
	m.AddAlloc("A", New(1))
	m.AddAlloc("B", New(2, 3))
	m.AddAlloc("C", Set{}) // no cores: nothing changes
	m.RemoveAlloc("A")
	m.RemoveAlloc("nope")
	m.RemoveAlloc("B")
	want := []string{"0,2-3", "0", "0-1", "0-3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("task moved onto %v, want %v", got, want)
	}
	// Every usable core reserved: tasks without cores share them all.
	m.AddAlloc("D", New(0, 1, 2, 3))
	if s := m.Shared(); s.String() != "0-3" {
		t.Fatalf("shared %q with every core reserved, want all usable", s)
	}
}

func TestTrackMovesTaskStartedOnStaleSet(t *testing.T) {
	m := NewManager(New(0, 1), nil)
	before := m.Shared()
	m.AddAlloc("A", New(1)) // changes while the task starts
	var got Set
	untrack := m.Track("a/t", before, func(s Set) error { got = s; return nil })
	if got.String() != "0" {
		t.Fatalf("task started on %q was put on %q, want 0", before, got)
	}
	untrack()
	got = Set{}
	m.RemoveAlloc("A")
	if !got.Empty() {
		t.Fatalf("an untracked task was moved onto %q", got)
	}
	// A recovered task (nothing known about its set) is always put on it.
	m.Track("b/t", Set{}, func(s Set) error { got = s; return nil })
	if got.String() != "0-1" {
		t.Fatalf("recovered task put on %q, want 0-1", got)
	}
}

func TestFailedMoveIsRetriedOnNextChange(t *testing.T) {
	m := NewManager(New(0, 1, 2), nil)
	m.retryMin, m.retryMax = time.Hour, time.Hour // only the next change retries
	fail := true
	var got Set
	m.Track("a/t", m.Shared(), func(s Set) error {
		if fail {
			return errors.New("engine busy")
		}
		got = s
		return nil
	})
	m.AddAlloc("A", New(2))
	fail = false
	m.AddAlloc("B", New(1)) // the task was never moved off 2
	if got.String() != "0" {
		t.Fatalf("task on %q after a failed move, want 0", got)
	}
}

// A failed move is retried on its own (the engine was briefly down), with
// no further change of the shared set.
func TestFailedMoveIsRetriedLater(t *testing.T) {
	m := NewManager(New(0, 1), nil)
	m.retryMin, m.retryMax = 10*time.Millisecond, 40*time.Millisecond
	var mu sync.Mutex
	failures, got := 3, Set{}
	m.Track("a/t", m.Shared(), func(s Set) error {
		mu.Lock()
		defer mu.Unlock()
		if failures > 0 {
			failures--
			return errors.New("engine down")
		}
		got = s
		return nil
	})
	m.AddAlloc("A", New(1))
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		done := got.String() == "0"
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the task was never moved after its move failed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestConcurrentAllocChanges: many allocations added and removed at once
// while tasks come and go; afterwards the manager's set is the one a plain
// recomputation gives, and every task still tracked was last moved onto it.
func TestConcurrentAllocChanges(t *testing.T) {
	usable := New(0, 1, 2, 3, 4, 5, 6, 7)
	m := NewManager(usable, nil)

	type probe struct {
		mu   sync.Mutex
		last Set
	}
	probes := make([]*probe, 4)
	for i := range probes {
		p := &probe{}
		probes[i] = p
		m.Track(fmt.Sprintf("steady/%d", i), m.Shared(), func(s Set) error {
			p.mu.Lock()
			p.last = s
			p.mu.Unlock()
			return nil
		})
	}

	const writers, ops = 8, 200
	final := make([]map[string]Set, writers) // each writer's own allocations
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			mine := map[string]Set{}
			for i := 0; i < ops; i++ {
				id := fmt.Sprintf("w%d-a%d", w, rng.Intn(4))
				switch rng.Intn(3) {
				case 0, 1:
					c := New(uint16(rng.Intn(8)), uint16(rng.Intn(8)))
					m.AddAlloc(id, c)
					mine[id] = c
				default:
					m.RemoveAlloc(id)
					delete(mine, id)
				}
				// Tasks start and stop meanwhile.
				untrack := m.Track(fmt.Sprintf("churn/%d/%d", w, i), m.Shared(), func(Set) error { return nil })
				untrack()
			}
			final[w] = mine
		}(w)
	}
	wg.Wait()

	all := map[string]Set{}
	for _, mine := range final {
		for id, s := range mine {
			all[id] = s
		}
	}
	want := recompute(usable, all)
	if got := m.Shared(); !got.Equal(want) {
		t.Fatalf("shared %q, a plain recomputation gives %q", got, want)
	}
	held := Set{}
	for _, s := range all {
		held = held.Union(s)
	}
	if got := m.Reserved(); !got.Equal(held) {
		t.Fatalf("reserved %q, the allocations hold %q", got, held)
	}
	if n := m.Tracked(); n != len(probes) {
		t.Fatalf("%d tasks tracked, want %d (churned tasks untracked)", n, len(probes))
	}
	for i, p := range probes {
		p.mu.Lock()
		last := p.last
		p.mu.Unlock()
		if last.Empty() {
			last = usable // never moved: still on the set it started on
		}
		if !last.Equal(want) {
			t.Fatalf("task %d last moved onto %q, want %q", i, last, want)
		}
	}
}
