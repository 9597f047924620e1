package structs

import (
	"strconv"
	"strings"
)

// PortBitmapSize is the number of bits in a port bitmap: one per TCP/UDP port.
const PortBitmapSize = 65536

// bitmapPageBits is the number of bits of one lazily allocated page.
const bitmapPageBits = 4096

// Bitmap is a fixed-size set of small non-negative integers (ports). The
// zero value is unusable; build one with NewBitmap.
//
// Pages of 4,096 bits are allocated when a bit in them is first set: a
// NetworkIndex is built for every candidate node during ranking, and a node
// uses a handful of ports, so a dense 8 KiB bitmap per address was the
// scheduler's largest allocation (43% of the bytes allocated in the
// steady-fill profile, bench/README.md).
type Bitmap = *bitmap

type bitmap struct {
	pages [PortBitmapSize / bitmapPageBits]*[bitmapPageBits / 64]uint64
}

// NewBitmap returns an empty bitmap of PortBitmapSize bits.
func NewBitmap() Bitmap { return &bitmap{} }

// Size is the number of bits the bitmap holds.
func (b *bitmap) Size() uint { return PortBitmapSize }

// Set marks idx. Out-of-range indexes are ignored.
func (b *bitmap) Set(idx uint) {
	if idx >= PortBitmapSize {
		return
	}
	p := b.pages[idx/bitmapPageBits]
	if p == nil {
		p = new([bitmapPageBits / 64]uint64)
		b.pages[idx/bitmapPageBits] = p
	}
	p[idx%bitmapPageBits/64] |= 1 << (idx % 64)
}

// Unset clears idx. Out-of-range indexes are ignored.
func (b *bitmap) Unset(idx uint) {
	if idx >= PortBitmapSize {
		return
	}
	if p := b.pages[idx/bitmapPageBits]; p != nil {
		p[idx%bitmapPageBits/64] &^= 1 << (idx % 64)
	}
}

// Check reports whether idx is set. Out-of-range indexes read as unset.
func (b *bitmap) Check(idx uint) bool {
	if idx >= PortBitmapSize {
		return false
	}
	p := b.pages[idx/bitmapPageBits]
	return p != nil && p[idx%bitmapPageBits/64]&(1<<(idx%64)) != 0
}

// Copy returns an independent copy.
func (b *bitmap) Copy() Bitmap {
	c := &bitmap{}
	for i, p := range b.pages {
		if p != nil {
			cp := *p
			c.pages[i] = &cp
		}
	}
	return c
}

// IndexesInRange returns the indexes in [from, to] (inclusive) whose bit equals set.
func (b *bitmap) IndexesInRange(set bool, from, to uint) []int {
	if to >= b.Size() {
		to = b.Size() - 1
	}
	var out []int
	for i := from; i <= to && i < b.Size(); i++ {
		if b.Check(i) == set {
			out = append(out, int(i))
		}
	}
	return out
}

// String lists the set indexes with runs collapsed: "22,80,8000-8100".
func (b *bitmap) String() string {
	var sb strings.Builder
	size := b.Size()
	for i := uint(0); i < size; i++ {
		if !b.Check(i) {
			continue
		}
		j := i
		for j+1 < size && b.Check(j+1) {
			j++
		}
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatUint(uint64(i), 10))
		if j > i {
			sb.WriteByte('-')
			sb.WriteString(strconv.FormatUint(uint64(j), 10))
		}
		i = j
	}
	return sb.String()
}
