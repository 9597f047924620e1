package feasible

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/drover-project/drover/internal/structs"
)

// The lazily shuffled source visits every node exactly once per full
// pass, keeps its order across selections (which resume where the last
// stopped), is reproducible from the seed, and leaves the caller's list
// untouched.
func TestSourceIterator_LazyShuffle(t *testing.T) {
	var nodes []*structs.Node
	for i := 0; i < 50; i++ {
		nodes = append(nodes, &structs.Node{ID: fmt.Sprintf("n%02d", i)})
	}
	orig := append([]*structs.Node(nil), nodes...)
	run := func(seed uint64) []string {
		ctx := NewContext(nil, nil, nil, seed, 1)
		src := NewSourceIterator(ctx, nil)
		src.SetShuffledNodes(nodes, ctx.Rand)
		var ids []string
		// Partial selections first (3 nodes each), then full passes.
		for sel := 0; sel < 5; sel++ {
			src.Reset()
			for k := 0; k < 3; k++ {
				ids = append(ids, src.Next().ID)
			}
		}
		for pass := 0; pass < 2; pass++ {
			src.Reset()
			for n := src.Next(); n != nil; n = src.Next() {
				ids = append(ids, n.ID)
			}
		}
		return ids
	}
	ids := run(7)
	if len(ids) != 15+100 {
		t.Fatalf("visited %d nodes, want 115", len(ids))
	}
	// The first full pass starts at position 15 and wraps around: the
	// 50 nodes it yields are each node once.
	seen := map[string]int{}
	for _, id := range ids[15:65] {
		seen[id]++
	}
	if len(seen) != 50 {
		t.Fatalf("a full pass visited %d distinct nodes, want 50", len(seen))
	}
	// The partial selections walked positions 0..14 of the same order.
	for i := 0; i < 15; i++ {
		if ids[i] != ids[65+35+i] {
			t.Fatalf("position %d is %s in a selection and %s in a later pass", i, ids[i], ids[100+i])
		}
	}
	if fmt.Sprint(run(7)) != fmt.Sprint(ids) {
		t.Fatal("the same seed gave a different order")
	}
	if fmt.Sprint(run(8)) == fmt.Sprint(ids) {
		t.Fatal("a different seed gave the same order")
	}
	for i := range nodes {
		if nodes[i] != orig[i] {
			t.Fatal("the source reordered the caller's node list")
		}
	}
}

// Every node is equally likely to come first.
func TestSourceIterator_LazyShuffleUniformFirst(t *testing.T) {
	var nodes []*structs.Node
	for i := 0; i < 4; i++ {
		nodes = append(nodes, &structs.Node{ID: fmt.Sprint(i)})
	}
	r := rand.New(rand.NewPCG(1, 2))
	first := map[string]int{}
	ctx := NewContext(nil, nil, nil, 1, 1)
	for i := 0; i < 4000; i++ {
		src := NewSourceIterator(ctx, nil)
		src.SetShuffledNodes(nodes, r)
		first[src.Next().ID]++
	}
	for id, c := range first {
		if c < 850 || c > 1150 {
			t.Fatalf("node %s came first %d times of 4000, want about 1000: %v", id, c, first)
		}
	}
}
