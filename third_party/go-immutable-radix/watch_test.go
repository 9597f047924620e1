package iradix

import (
	"sync"
	"testing"
	"time"
)

// Drover: nodes nobody watched hold no channel; a watch taken before or
// after (or racing with) the commit that replaces a key is always woken.
func TestLazyMutateCh(t *testing.T) {
	r := New()
	txn := r.Txn()
	txn.TrackMutate(true)
	for _, k := range []string{"alloc/1", "alloc/2", "alloc/3", "node/1"} {
		txn.Insert([]byte(k), k)
	}
	r = txn.Commit()
	made := 0
	var count func(n *Node)
	count = func(n *Node) {
		if n.mutateCh.p.Load() != nil {
			made++
		}
		if n.leaf != nil && n.leaf.mutateCh.p.Load() != nil {
			made++
		}
		for _, e := range n.edges {
			count(e.node)
		}
	}
	count(r.Root())
	if made != 0 {
		t.Fatalf("%d channels made with no watcher", made)
	}

	var prev <-chan struct{}
	for round := 0; round < 200; round++ {
		old := r
		var wg sync.WaitGroup
		watches := make(chan (<-chan struct{}), 4)
		for _, k := range []string{"alloc/2", "alloc/"} {
			k := k
			wg.Add(1)
			go func() {
				defer wg.Done()
				if k == "alloc/" {
					it := old.Root().Iterator()
					watches <- it.SeekPrefixWatch([]byte(k))
					return
				}
				ch, _, _ := old.Root().GetWatch([]byte(k))
				watches <- ch
			}()
		}
		txn := r.Txn()
		txn.TrackMutate(true)
		txn.Insert([]byte("alloc/2"), round)
		r = txn.Commit()
		wg.Wait()
		close(watches)
		for ch := range watches {
			select {
			case <-ch:
			case <-time.After(5 * time.Second):
				t.Fatalf("round %d: a watch on a replaced node was never closed", round)
			}
		}
		// A watch taken after the commit on the old tree is closed at
		// once, and is the same channel every time it is asked for.
		ch, _, _ := old.Root().GetWatch([]byte("alloc/2"))
		again, _, _ := old.Root().GetWatch([]byte("alloc/2"))
		if !isClosedCh(ch) || ch != again {
			t.Fatalf("round %d: late watch on a replaced leaf is open or not stable", round)
		}
		if prev != nil && prev == ch {
			t.Fatalf("round %d: two replaced leaves share a channel", round)
		}
		prev = ch
		// The new tree's leaf is open.
		if ch, _, _ := r.Root().GetWatch([]byte("alloc/2")); isClosedCh(ch) {
			t.Fatalf("round %d: new leaf's watch is closed", round)
		}
	}
}

func isClosedCh(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
