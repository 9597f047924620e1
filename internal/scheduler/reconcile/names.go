package reconcile

import (
	"sort"

	"github.com/drover-project/drover/internal/structs"
)

// nameIndex tracks which of a group's name indexes ("job.group[n]") are in
// use. New placements take the lowest free indexes, stops the highest used
// ones, canaries the names of the allocations they will replace. It holds
// only the used indexes, never one entry per count: a group's count may be
// huge (see Fresh).
type nameIndex struct {
	job, group string
	count      int
	used       map[uint]int // index -> allocations holding it
}

func newNameIndex(job, group string, count int, in allocSet) *nameIndex {
	n := &nameIndex{job: job, group: group, count: count, used: make(map[uint]int, len(in))}
	for _, a := range in {
		n.used[a.Index()]++
	}
	return n
}

func (n *nameIndex) name(i uint) string { return structs.AllocName(n.job, n.group, i) }

// unset releases one holder of index i.
func (n *nameIndex) unset(i uint) {
	if n.used[i] <= 1 {
		delete(n.used, i)
	} else {
		n.used[i]--
	}
}

// highest returns the names of the k highest used indexes.
func (n *nameIndex) highest(k int) map[string]struct{} {
	idx := make([]uint, 0, len(n.used))
	for i := range n.used {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] > idx[b] })
	out := make(map[string]struct{}, k)
	for _, i := range idx {
		if len(out) == k {
			break
		}
		out[n.name(i)] = struct{}{}
	}
	return out
}

// fresh returns a lazy list of k new names, lowest free index first, and
// marks nothing: the scheduler names them as it places them.
func (n *nameIndex) fresh(tg *structs.TaskGroup, k int) Fresh {
	used := make(map[uint]bool, len(n.used))
	for i := range n.used {
		used[i] = true
	}
	return Fresh{TaskGroup: tg, Count: k, jobID: n.job, used: used}
}

// nextCanaries returns k names for canaries: first the names of
// allocations being destructively replaced that no canary holds yet, then
// free indexes below count, then indexes above it.
func (n *nameIndex) nextCanaries(k int, existing, destructive allocSet) []string {
	out := make([]string, 0, k)
	taken := existing.nameSet()
	for _, a := range destructive.nameOrder() {
		if len(out) == k {
			return out
		}
		if _, ok := taken[a.Name]; ok {
			continue
		}
		taken[a.Name] = struct{}{}
		out = append(out, a.Name)
	}
	for i := uint(0); len(out) < k; i++ {
		name := n.name(i)
		if _, ok := taken[name]; ok {
			continue
		}
		if int(i) < n.count && n.used[i] > 0 {
			continue
		}
		taken[name] = struct{}{}
		out = append(out, name)
	}
	return out
}
