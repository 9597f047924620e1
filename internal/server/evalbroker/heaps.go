package evalbroker

import (
	"container/heap"

	"github.com/drover-project/drover/internal/structs"
)

// item is an eval with the sequence number of its arrival, which breaks ties
// so equal evals are served first-in first-out.
type item struct {
	eval *structs.Evaluation
	seq  uint64
}

// evalHeap is a binary heap of items ordered by less.
type evalHeap struct {
	items []item
	less  func(a, b item) bool
}

func (h *evalHeap) Len() int           { return len(h.items) }
func (h *evalHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *evalHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *evalHeap) Push(x any)         { h.items = append(h.items, x.(item)) }
func (h *evalHeap) Pop() any {
	n := len(h.items)
	it := h.items[n-1]
	h.items[n-1] = item{}
	h.items = h.items[:n-1]
	return it
}

func (h *evalHeap) push(it item) { heap.Push(h, it) }
func (h *evalHeap) pop() item    { return heap.Pop(h).(item) }
func (h *evalHeap) peek() item   { return h.items[0] }

// remove deletes the eval with id, reporting whether it was there.
func (h *evalHeap) remove(id string) bool {
	for i, it := range h.items {
		if it.eval.ID == id {
			heap.Remove(h, i)
			return true
		}
	}
	return false
}

// readyLess: higher priority, then lower CreateIndex, then arrival.
func readyLess(a, b item) bool {
	if a.eval.Priority != b.eval.Priority {
		return a.eval.Priority > b.eval.Priority
	}
	if a.eval.CreateIndex != b.eval.CreateIndex {
		return a.eval.CreateIndex < b.eval.CreateIndex
	}
	return a.seq < b.seq
}

// pendingLess: higher priority, then newest (ModifyIndex, then arrival), so
// the eval promoted on Ack is the one that has seen the most recent job.
func pendingLess(a, b item) bool {
	if a.eval.Priority != b.eval.Priority {
		return a.eval.Priority > b.eval.Priority
	}
	if a.eval.ModifyIndex != b.eval.ModifyIndex {
		return a.eval.ModifyIndex > b.eval.ModifyIndex
	}
	return a.seq > b.seq
}

// delayLess: earliest WaitUntil first.
func delayLess(a, b item) bool {
	if !a.eval.WaitUntil.Equal(b.eval.WaitUntil) {
		return a.eval.WaitUntil.Before(b.eval.WaitUntil)
	}
	return a.seq < b.seq
}
