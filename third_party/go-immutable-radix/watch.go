package iradix

import "sync/atomic"

// Drover's change to go-immutable-radix v1.3.1 (see DROVER.md): a node's
// and a leaf's mutation channel is made only when someone asks for it.
//
// Upstream gives every node and every leaf its own channel when it is
// created. A Go channel costs 112 bytes, two per stored key, and a store
// of 100,000 allocations under three indexes held ~70 MB of channels of
// which blocking queries watch a few hundred. A node's channel is closed
// when a committed transaction replaces the node; the only readers are
// GetWatch and SeekPrefixWatch.
//
// What upstream guarantees still holds: each node has one channel for its
// whole life (callers use its identity as a version token: an equal
// channel means an unchanged subtree), distinct nodes have distinct
// channels, and the channel is closed once the node was replaced.
//
// mutateCh holds nil (not asked for, not mutated), mutatedMark (mutated
// before anyone asked: the channel is made closed when first asked for),
// or the node's channel. Readers and the notifying writer race through one
// atomic word with compare-and-swap only:
//   - get: nil -> a new open channel; mutatedMark -> a new closed channel;
//     the loser of a race returns what the winner stored;
//   - notify: nil -> mutatedMark; a stored channel is closed.
//
// So a reader either stored its channel before the writer looked (and the
// writer closes it) or after (and makes it closed): no wake-up is lost.
type mutateCh struct {
	p atomic.Pointer[chan struct{}]
}

// mutatedMark marks a node replaced before its channel was asked for. It
// is never handed out.
var mutatedMark = new(chan struct{})

// get returns the node's mutation channel, making it on first use.
func (m *mutateCh) get() chan struct{} {
	for {
		p := m.p.Load()
		if p != nil && p != mutatedMark {
			return *p
		}
		ch := make(chan struct{})
		if p == mutatedMark {
			close(ch)
		}
		if m.p.CompareAndSwap(p, &ch) {
			return ch
		}
	}
}

// notify marks the node mutated and wakes its watchers. Only the single
// writer of the tree calls it; calling it twice is harmless.
func (m *mutateCh) notify() {
	for {
		p := m.p.Load()
		switch {
		case p == mutatedMark:
			return
		case p == nil:
			if m.p.CompareAndSwap(nil, mutatedMark) {
				return
			}
		default:
			select {
			case <-*p:
			default:
				close(*p)
			}
			return
		}
	}
}
