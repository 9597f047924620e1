package structs

import "math"

// Capacity arithmetic that cannot wrap. Validation keeps new asks far
// below int64's range (resources_validate.go), but sums run over stored
// data too: allocations and nodes written before the checks existed, or
// decoded from an old Raft log. A wrapped sum made a node with one
// int64-max ask look nearly empty.
//
// Each figure counts for at most MaxCountedResource (and at least 0) in a
// sum, so adding and then removing an allocation always gives back the
// same total; sums saturate at the int64 limits rather than wrap.

// MaxCountedResource is the most one resource figure (MHz or MB) counts
// for: 2^42, thousands of times any real node, so a clamped figure still
// exhausts every node, yet 2^21 of them sum without saturating.
const MaxCountedResource = 1 << 42

// Counted is v as it counts in a capacity sum: negative figures count as
// 0, huge ones as MaxCountedResource.
func Counted(v int64) int64 {
	switch {
	case v < 0:
		return 0
	case v > MaxCountedResource:
		return MaxCountedResource
	}
	return v
}

// CountedU is Counted for an unsigned figure (node reservations).
func CountedU(v uint64) int64 {
	if v > MaxCountedResource {
		return MaxCountedResource
	}
	return int64(v)
}

// SatAdd is a+b, saturated at the int64 limits instead of wrapping.
func SatAdd(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// SatSub is a-b, saturated at the int64 limits instead of wrapping.
func SatSub(a, b int64) int64 {
	if b == math.MinInt64 {
		if a >= 0 {
			return math.MaxInt64
		}
		return a - b
	}
	return SatAdd(a, -b)
}

// Sub removes o from c (saturating).
func (c *ComparableResources) Sub(o ComparableResources) {
	c.CPU = SatSub(c.CPU, o.CPU)
	c.MemoryMB = SatSub(c.MemoryMB, o.MemoryMB)
	c.MemoryMaxMB = SatSub(c.MemoryMaxMB, o.MemoryMaxMB)
	c.DiskMB = SatSub(c.DiskMB, o.DiskMB)
}

// addTask counts one task's grant into c: its CPU, memory, and memory_max
// (memory when memory_max is lower).
func (c *ComparableResources) addTask(t *AllocatedTaskResources) {
	mem := Counted(t.Memory.MemoryMB)
	c.CPU = SatAdd(c.CPU, Counted(t.Cpu.CpuShares))
	c.MemoryMB = SatAdd(c.MemoryMB, mem)
	c.MemoryMaxMB = SatAdd(c.MemoryMaxMB, max(mem, Counted(t.Memory.MemoryMaxMB)))
}
