package structs

import (
	"math"
	"testing"
)

func TestSatAddSub(t *testing.T) {
	cases := []struct{ a, b, add, sub int64 }{
		{1, 2, 3, -1},
		{math.MaxInt64, 1, math.MaxInt64, math.MaxInt64 - 1},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64, 0},
		{math.MinInt64, -1, math.MinInt64, math.MinInt64 + 1},
		{0, math.MinInt64, math.MinInt64, math.MaxInt64},
		{-5, math.MaxInt64, math.MaxInt64 - 5, math.MinInt64},
	}
	for _, c := range cases {
		if got := SatAdd(c.a, c.b); got != c.add {
			t.Errorf("SatAdd(%d, %d) = %d, want %d", c.a, c.b, got, c.add)
		}
		if got := SatSub(c.a, c.b); got != c.sub {
			t.Errorf("SatSub(%d, %d) = %d, want %d", c.a, c.b, got, c.sub)
		}
	}
}

// An allocation holding int64-max memory or CPU (stored before validation
// refused it) makes its node full, never wraps the node's sums back to
// nearly empty; removing it gives the exact earlier sums back; a negative
// figure holds nothing rather than freeing capacity.
func TestCapacitySumsNeverWrap(t *testing.T) {
	node := fitNode()
	small := fitAlloc("small", 100, 256, 100)
	hugeMem := fitAlloc("huge-mem", 100, math.MaxInt64, 0)
	hugeCPU := fitAlloc("huge-cpu", math.MaxInt64, 10, 0)
	// Two int64-max asks wrapped the old sum to -2: the node looked empty.
	twice := []*Allocation{small, hugeMem, fitAlloc("huge-mem-2", 100, math.MaxInt64, 0)}
	if fit, dim, used, _ := AllocsFit(node, twice, nil); fit || dim != "memory" || used.MemoryMB < MaxCountedResource {
		t.Fatalf("two int64-max memory asks: fit %v dim %q used %d MB", fit, dim, used.MemoryMB)
	}
	if fit, dim, _, _ := AllocsFit(node, []*Allocation{small, hugeCPU}, nil); fit || dim != "cpu" {
		t.Fatalf("int64-max cpu ask fits: dim %q", dim)
	}

	u := SumAllocs([]*Allocation{small})
	before := u.Used
	u.Add(hugeMem)
	u.Add(hugeCPU)
	if u.Used.MemoryMB <= before.MemoryMB || u.Used.CPU <= before.CPU {
		t.Fatalf("sums went down after adding huge asks: %+v", u.Used)
	}
	if fit, _ := u.FitsTotals(node); fit {
		t.Fatal("node with huge asks reported as fitting")
	}
	u.Remove(hugeCPU)
	u.Remove(hugeMem)
	if u.Used != before || u.Live != 1 {
		t.Fatalf("add then remove: %+v, want %+v", u.Used, before)
	}

	// Negative figures (DiskMB -10 was accepted before) count as nothing.
	neg := fitAlloc("neg", -4000, -8192, -10)
	if c := neg.AllocatedResources.Comparable(); c != (ComparableResources{}) {
		t.Fatalf("negative grant counts as %+v", c)
	}
	if fit, dim, _, _ := AllocsFit(node, []*Allocation{neg, fitAlloc("big", 3000, 8000, 100)}, nil); !fit {
		t.Fatalf("negative grant changed what fits: %q", dim)
	}
	if fit, _, _, _ := AllocsFit(node, []*Allocation{neg, fitAlloc("too-big", 3001, 8000, 100)}, nil); fit {
		t.Fatal("a negative grant freed capacity on the node")
	}

	// A reservation above the resource leaves nothing, not a uint64 wrapped
	// into extra capacity.
	n := fitNode()
	n.ReservedResources.Memory.MemoryMB = math.MaxUint64
	n.ReservedResources.Cpu.CpuShares = 1 << 63
	if c := n.Comparable(); c.MemoryMB != 0 || c.CPU != 0 {
		t.Fatalf("huge reservation: capacity %+v", c)
	}
}
