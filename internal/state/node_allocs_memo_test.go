package state

import (
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"sync"
	"testing"
	"unique"

	"github.com/drover-project/drover/internal/structs"
)

// freshPull is NodeClientAllocs computed without the memo: every
// allocation of the node read from the radix tree.
// pullTable is the table a client's answer carries for pull: alloc ID ->
// AllocModifyIndex, as the client decodes it.
func pullTable(pull ClientPull) map[string]uint64 {
	var r structs.NodeClientAllocsResponse
	r.SetAllocsOf(pull.All)
	r.InmemReply()
	return r.Allocs
}

func freshPull(t *testing.T, s *reader, nodeID string, changedAfter uint64) (map[string]uint64, uint64, []*structs.Allocation) {
	t.Helper()
	all, err := s.AllocsByNode(nil, nodeID)
	must(t, err)
	deleted, err := s.Index(nodeAllocsDeletedKey(nodeID))
	must(t, err)
	m := map[string]uint64{}
	index := deleted
	var changed []*structs.Allocation
	for _, a := range all {
		m[a.ID] = a.AllocModifyIndex
		index = max(index, a.AllocModifyIndex)
		if a.AllocModifyIndex > changedAfter {
			changed = append(changed, a)
		}
	}
	return m, index, changed
}

// checkMemoEntries checks every memo entry that claims to be current
// against a fresh read of the store, before anything reads through the
// memo (which would repair a wrong entry): what the writes derived must
// equal what a reader collects. It returns how many entries were current.
func checkMemoEntries(t *testing.T, s *StateStore, step string) int {
	t.Helper()
	s.nodeAllocs.mu.Lock()
	entries := make(map[string]*nodeAllocs, len(s.nodeAllocs.byNode))
	for id, v := range s.nodeAllocs.byNode {
		entries[id] = v
	}
	s.nodeAllocs.mu.Unlock()
	if n := s.nodeAllocs.bypassed.Load(); n != 0 {
		t.Fatalf("%s: %d alloc writes were not numbered", step, n)
	}
	current := 0
	txn := s.db.Txn(false)
	defer txn.Abort()
	for id, v := range entries {
		if !v.current() {
			continue
		}
		current++
		iter, err := txn.Get(tableAllocs, "node_terminal_prefix", nodeKeyPrefix(id))
		must(t, err)
		if iter.WatchCh() != v.version {
			t.Fatalf("%s: %s: memo entry is open but not the node's version", step, id)
		}
		all := collectAllocs(iter, nil)
		if !slices.Equal(v.all, all) {
			t.Fatalf("%s: %s: memo has %v, store %v", step, id, allocIDs(v.all), allocIDs(all))
		}
		live, err := s.AllocsByNodeTerminal(nil, id, false)
		must(t, err)
		if !slices.Equal(v.live.Allocs, live) {
			t.Fatalf("%s: %s: memo's live %v, store %v", step, id, allocIDs(v.live.Allocs), allocIDs(live))
		}
		if g := v.live.groups.Load(); g != nil {
			want := make([]unique.Handle[AllocGroup], len(live))
			for i, a := range live {
				want[i] = GroupOf(a)
			}
			if !slices.Equal(*g, want) {
				t.Fatalf("%s: %s: memo's groups are not its allocations'", step, id)
			}
		}
		if u := v.live.usage.Load(); u != nil && *u != structs.SumAllocs(live) {
			t.Fatalf("%s: %s: memo's usage %+v, sum %+v", step, id, *u, structs.SumAllocs(live))
		}
		if p := v.pull.Load(); p != nil {
			var top uint64
			for _, a := range all {
				top = max(top, a.AllocModifyIndex)
			}
			if p.max != top {
				t.Fatalf("%s: %s: memo's pull max %d, store max %d", step, id, p.max, top)
			}
		}
	}
	return current
}

// checkReads compares what the memo serves for every node (the
// scheduler's reader on snap and, on the store itself, the client pull)
// with fresh reads.
func checkReads(t *testing.T, snap *reader, nodes []string, step string) {
	t.Helper()
	read := snap.LiveAllocsByNodeReader()
	for _, id := range nodes {
		la, err := read(id)
		must(t, err)
		want, err := snap.AllocsByNodeTerminal(nil, id, false)
		must(t, err)
		if !slices.Equal(la.Allocs, want) {
			t.Fatalf("%s: %s: reader %v, store %v", step, id, allocIDs(la.Allocs), allocIDs(want))
		}
		if len(want) > 0 {
			// Counting computes the groups, which later writes carry.
			g := GroupOf(want[0])
			n := 0
			for _, a := range want {
				if GroupOf(a) == g {
					n++
				}
			}
			if got := la.CountGroup(g); got != n {
				t.Fatalf("%s: %s: %d allocations of %v, want %d", step, id, got, g.Value(), n)
			}
		}
		if got, sum := la.Usage(), structs.SumAllocs(want); got != sum {
			t.Fatalf("%s: %s: usage %+v, sum %+v", step, id, got, sum)
		}
		for _, after := range []uint64{0, 5, 20, 40} {
			pull, err := snap.NodeClientAllocs(id, after, true)
			must(t, err)
			m, index, changed := freshPull(t, snap, id, after)
			if pull.Node == nil {
				continue // unregistered node: nothing else is read
			}
			if !reflect.DeepEqual(pullTable(pull), m) || pull.Index != index || !slices.Equal(pull.Changed, changed) {
				t.Fatalf("%s: %s after %d: pull %v index %d changed %v, store %v index %d changed %v", step, id, after,
					pullTable(pull), pull.Index, allocIDs(pull.Changed), m, index, allocIDs(changed))
			}
		}
	}
}

func memoRes(cpu, mem int64) *structs.AllocatedResources {
	return &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
		"t": {Cpu: structs.AllocatedCpuResources{CpuShares: cpu}, Memory: structs.AllocatedMemoryResources{MemoryMB: mem}}},
		Shared: structs.AllocatedSharedResources{DiskMB: 10}}
}

// The memo's entries, kept current by the writes, equal a fresh reading
// after every kind of alloc write: placements, server updates, client
// updates (live and to terminal), stops and preemptions by plans, a move
// between nodes, GC, and in a store restored from the result; readers of
// older snapshots still read their own point in time and leave the
// current entries in place.
func TestNodeAllocsMemo_MaintainedByWrites(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 2, mockJob("j"))
	nodes := []string{"n1", "n2", "n3", "n10", "none"}
	for i, id := range nodes[:4] {
		must(t, s.UpsertNode(uint64(3+i), mockNode(id)))
	}
	index := uint64(10)
	alloc := func(id, node string, cpu int64) *structs.Allocation {
		a := mockAlloc(id, node, job)
		a.AllocatedResources = memoRes(cpu, 64)
		return a
	}
	get := func(id string) *structs.Allocation {
		a, err := s.AllocByID(nil, id)
		must(t, err)
		return a
	}
	var olds []*StateSnapshot
	step := func(name string, write func(index uint64) error) {
		t.Helper()
		snap, _ := s.Snapshot()
		olds = append(olds, snap)
		index++
		must(t, write(index))
		if n := checkMemoEntries(t, s, name); n == 0 {
			t.Fatalf("%s: no memo entry kept current", name)
		}
		now, _ := s.Snapshot()
		checkReads(t, &now.reader, nodes, name)
		// An older snapshot reads its own allocations through the memo
		// without displacing the current entries.
		checkReads(t, &olds[len(olds)/2].reader, nodes, name+" (older snapshot)")
		checkMemoEntries(t, s, name+" after old reads")
	}

	checkReads(t, &s.reader, nodes, "empty") // fills the memo
	step("placements", func(i uint64) error {
		return s.UpsertAllocs(i, []*structs.Allocation{alloc("a1", "n1", 100), alloc("a2", "n1", 50),
			alloc("b1", "n2", 10), alloc("c1", "n10", 20)})
	})
	step("more placements", func(i uint64) error {
		return s.UpsertAllocs(i, []*structs.Allocation{alloc("a0", "n1", 7), alloc("a3", "n1", 30), alloc("b0", "n2", 5)})
	})
	step("client running", func(i uint64) error {
		return s.UpdateAllocsFromClient(i, []*structs.Allocation{
			{ID: "a1", ClientStatus: structs.AllocClientStatusRunning},
			{ID: "b1", ClientStatus: structs.AllocClientStatusRunning}})
	})
	step("client complete", func(i uint64) error {
		return s.UpdateAllocsFromClient(i, []*structs.Allocation{{ID: "a2", ClientStatus: structs.AllocClientStatusComplete}})
	})
	step("server update with new resources", func(i uint64) error {
		a := *get("a3")
		a.AllocatedResources = memoRes(300, 128)
		return s.UpsertAllocs(i, []*structs.Allocation{&a})
	})
	step("plan: stop, preempt, place, replace", func(i uint64) error {
		repl := alloc("a4", "n1", 40)
		repl.PreviousAllocation = "a0" // links a0 (same node) to its replacement
		return s.UpsertPlanResults(i, &structs.ApplyPlanResultsRequest{
			AllocsStopped:   []*structs.Allocation{{ID: "a0", DesiredDescription: "replaced"}},
			AllocsPreempted: []*structs.Allocation{{ID: "b0", PreemptedByAllocation: "b2"}},
			Alloc:           []*structs.Allocation{repl, alloc("b2", "n2", 60), alloc("d1", "n3", 1)},
		})
	})
	step("move between nodes", func(i uint64) error {
		a := *get("c1")
		a.NodeID = "n1"
		return s.UpsertAllocs(i, []*structs.Allocation{&a})
	})
	step("client failed and lost", func(i uint64) error {
		return s.UpdateAllocsFromClient(i, []*structs.Allocation{
			{ID: "a4", ClientStatus: structs.AllocClientStatusFailed},
			{ID: "d1", ClientStatus: structs.AllocClientStatusLost}})
	})
	step("gc", func(i uint64) error { return s.DeleteEval(i, nil, []string{"a0", "a2", "b0", "d1"}) })
	step("gc the rest of n2", func(i uint64) error {
		return s.DeleteEval(i, nil, []string{"b1", "b2"})
	})

	// A restored store reads the same allocations.
	r := testStore(t)
	checkReads(t, &r.reader, nodes, "before restore") // memo entries of the empty store
	restore, err := r.Restore()
	must(t, err)
	for _, id := range nodes[:4] {
		n, err := s.NodeByID(nil, id)
		must(t, err)
		must(t, restore.NodeRestore(n))
	}
	iter, err := s.Allocs(nil)
	must(t, err)
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		a := *raw.(*structs.Allocation)
		must(t, restore.AllocRestore(&a))
	}
	idx, err := s.Index(nodeAllocsDeletedKey("n2"))
	must(t, err)
	must(t, restore.IndexRestore(nodeAllocsDeletedKey("n2"), idx))
	must(t, restore.Commit())
	checkMemoEntries(t, r, "restore")
	checkReads(t, &r.reader, nodes, "restored")
	for _, id := range nodes {
		want, _, _ := freshPull(t, &s.reader, id, 0)
		got, _, _ := freshPull(t, &r.reader, id, 0)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("restored %s: %v, want %v", id, got, want)
		}
	}
}

// A client update that leaves its allocations live changes nothing the
// scheduler sums: the next scheduling pass is served the memo's entry the
// write derived (no fresh collection) with the same usage, not re-summed;
// the pull view is carried over too.
func TestNodeAllocsMemo_ClientUpdateKeepsUsage(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 2, mockJob("j"))
	must(t, s.UpsertNode(3, mockNode("n1")))
	var allocs []*structs.Allocation
	for i := 0; i < 3; i++ {
		a := mockAlloc(fmt.Sprintf("a%d", i), "n1", job)
		a.AllocatedResources = memoRes(int64(100*(i+1)), 64)
		allocs = append(allocs, a)
	}
	must(t, s.UpsertAllocs(10, allocs))
	before, err := s.LiveAllocsByNodeReader()("n1")
	must(t, err)
	usage := before.Usage()
	pull, err := s.NodeClientAllocs("n1", 0, false)
	must(t, err)
	view := s.nodeAllocs.get("n1").pull.Load()

	must(t, s.UpdateAllocsFromClient(11, []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusRunning}}))
	entry := s.nodeAllocs.get("n1")
	if entry == nil || !entry.current() || &entry.live == before {
		t.Fatal("the client update did not leave a current memo entry of its own")
	}
	if entry.live.usage.Load() != before.usage.Load() {
		t.Fatal("the client update's entry re-sums the usage")
	}
	if view == nil || entry.pull.Load() != view {
		t.Fatal("the client update's entry lost the pull view")
	}
	after, err := s.LiveAllocsByNodeReader()("n1")
	must(t, err)
	if after != &entry.live {
		t.Fatal("the scheduler's read after a client update missed the memo")
	}
	if after.Usage() != usage {
		t.Fatalf("usage %+v after the client update, %+v before", after.Usage(), usage)
	}
	if after.Allocs[1].ClientStatus != structs.AllocClientStatusRunning {
		t.Fatal("the memo serves the allocation as it was before the client update")
	}
	pull2, err := s.NodeClientAllocs("n1", 10, true)
	must(t, err)
	if !reflect.DeepEqual(pullTable(pull2), pullTable(pull)) || pull2.Index != 10 || len(pull2.Changed) != 0 {
		t.Fatalf("pull after the client update: %+v", pull2)
	}

	// A placement adds to the carried sum; a completion leaves it to be
	// summed again.
	a := mockAlloc("a3", "n1", job)
	a.AllocatedResources = memoRes(7, 8)
	must(t, s.UpsertAllocs(12, []*structs.Allocation{a}))
	entry = s.nodeAllocs.get("n1")
	if u := entry.live.usage.Load(); u == nil || *u != structs.SumAllocs(entry.live.Allocs) {
		t.Fatalf("placement's usage %v, want %+v", u, structs.SumAllocs(entry.live.Allocs))
	}
	must(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{{ID: "a0", ClientStatus: structs.AllocClientStatusComplete}}))
	entry = s.nodeAllocs.get("n1")
	if entry.live.usage.Load() != nil {
		t.Fatal("a completion carried the usage over")
	}
	checkMemoEntries(t, s, "completion")
}

// Random sequences of alloc writes on a few nodes, with readers of old
// and new snapshots between them: the memo entries the writes keep
// current always equal the store, and every read equals a fresh one.
func TestNodeAllocsMemo_RandomWrites(t *testing.T) {
	for seed := int64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			s := testStore(t)
			// Two jobs: the nodes' allocations belong to different groups.
			jobs := []*structs.Job{storedJob(t, s, 1, mockJob("j")), storedJob(t, s, 2, mockJob("k"))}
			nodes := []string{"n0", "n1", "n2", "n3"}
			for i, id := range nodes {
				must(t, s.UpsertNode(uint64(3+i), mockNode(id)))
			}
			var ids []string
			statuses := []string{structs.AllocClientStatusPending, structs.AllocClientStatusRunning,
				structs.AllocClientStatusComplete, structs.AllocClientStatusFailed}
			var olds []*StateSnapshot
			index := uint64(10)
			for round := 0; round < 60; round++ {
				index++
				var err error
				switch op := rng.Intn(6); {
				case op <= 1 || len(ids) == 0:
					var batch []*structs.Allocation
					for k := rng.Intn(4); k >= 0; k-- {
						a := mockAlloc(fmt.Sprintf("a%03d", rng.Intn(200)), nodes[rng.Intn(len(nodes))], jobs[rng.Intn(2)])
						a.AllocatedResources = memoRes(int64(rng.Intn(100)), 32)
						ids = append(ids, a.ID)
						batch = append(batch, a)
					}
					err = s.UpsertAllocs(index, batch)
				case op == 2:
					var batch []*structs.Allocation
					for k := rng.Intn(4); k >= 0; k-- {
						batch = append(batch, &structs.Allocation{ID: ids[rng.Intn(len(ids))], ClientStatus: statuses[rng.Intn(len(statuses))]})
					}
					err = s.UpdateAllocsFromClient(index, batch)
				case op == 3:
					err = s.UpsertPlanResults(index, &structs.ApplyPlanResultsRequest{
						AllocsStopped: []*structs.Allocation{{ID: ids[rng.Intn(len(ids))]}}})
				case op == 4:
					err = s.DeleteEval(index, nil, []string{ids[rng.Intn(len(ids))]})
				default:
					a, _ := s.AllocByID(nil, ids[rng.Intn(len(ids))])
					if a != nil {
						c := *a
						c.NodeID = nodes[rng.Intn(len(nodes))]
						c.AllocatedResources = memoRes(int64(rng.Intn(100)), 16)
						err = s.UpsertAllocs(index, []*structs.Allocation{&c})
					}
				}
				must(t, err)
				checkMemoEntries(t, s, fmt.Sprint("round ", round))
				if rng.Intn(3) == 0 {
					snap, _ := s.Snapshot()
					olds = append(olds, snap)
				}
				if rng.Intn(2) == 0 {
					checkReads(t, &s.reader, nodes, fmt.Sprint("round ", round))
				}
				if len(olds) > 0 && rng.Intn(4) == 0 {
					checkReads(t, &olds[rng.Intn(len(olds))].reader, nodes, fmt.Sprint("round ", round, " old"))
				}
			}
		})
	}
}

// Readers of snapshots old and new, scheduler-like and pulls, run while
// the store places allocations and applies client updates (run with
// -race): each read equals a fresh read of its own snapshot.
func TestNodeAllocsMemo_ConcurrentReadersAndWriters(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 2, mockJob("j"))
	nodes := []string{"n0", "n1", "n2", "n3"}
	for i, id := range nodes {
		must(t, s.UpsertNode(uint64(3+i), mockNode(id)))
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				snap, _ := s.Snapshot()
				read := snap.LiveAllocsByNodeReader()
				for _, id := range nodes {
					la, err := read(id)
					if err != nil {
						errs <- err
						return
					}
					want, _ := snap.AllocsByNodeTerminal(nil, id, false)
					if !slices.Equal(la.Allocs, want) || la.Usage() != structs.SumAllocs(want) {
						errs <- fmt.Errorf("%s: reader %v, snapshot %v", id, allocIDs(la.Allocs), allocIDs(want))
						return
					}
					pull, err := snap.NodeClientAllocs(id, 0, true)
					if err != nil {
						errs <- err
						return
					}
					all, _ := snap.AllocsByNode(nil, id)
					if !slices.Equal(pull.All, all) || !slices.Equal(pull.Changed, all) {
						errs <- fmt.Errorf("%s: pull %v, snapshot %v", id, allocIDs(pull.All), allocIDs(all))
						return
					}
				}
			}
		}()
	}
	for i := 0; i < 150; i++ {
		a := mockAlloc(fmt.Sprintf("a%03d", i), nodes[i%len(nodes)], job)
		a.AllocatedResources = memoRes(int64(i), 8)
		must(t, s.UpsertAllocs(uint64(100+2*i), []*structs.Allocation{a}))
		status := structs.AllocClientStatusRunning
		if i%5 == 0 {
			status = structs.AllocClientStatusComplete
		}
		must(t, s.UpdateAllocsFromClient(uint64(101+2*i), []*structs.Allocation{{ID: fmt.Sprintf("a%03d", i/2), ClientStatus: status}}))
	}
	close(done)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	checkMemoEntries(t, s, "end")
}
