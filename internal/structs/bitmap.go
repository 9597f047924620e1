package structs

import (
	"strconv"
	"strings"
)

// PortBitmapSize is the number of bits in a port bitmap: one per TCP/UDP port.
const PortBitmapSize = 65536

// Bitmap is a fixed-size set of small non-negative integers (ports). The
// zero value is unusable; build one with NewBitmap.
type Bitmap []byte

// NewBitmap returns an empty bitmap of PortBitmapSize bits.
func NewBitmap() Bitmap { return make(Bitmap, PortBitmapSize/8) }

// Size is the number of bits the bitmap holds.
func (b Bitmap) Size() uint { return uint(len(b)) * 8 }

// Set marks idx. Out-of-range indexes are ignored.
func (b Bitmap) Set(idx uint) {
	if idx >= b.Size() {
		return
	}
	b[idx>>3] |= 1 << (idx & 7)
}

// Unset clears idx. Out-of-range indexes are ignored.
func (b Bitmap) Unset(idx uint) {
	if idx >= b.Size() {
		return
	}
	b[idx>>3] &^= 1 << (idx & 7)
}

// Check reports whether idx is set. Out-of-range indexes read as unset.
func (b Bitmap) Check(idx uint) bool {
	if idx >= b.Size() {
		return false
	}
	return b[idx>>3]&(1<<(idx&7)) != 0
}

// Copy returns an independent copy.
func (b Bitmap) Copy() Bitmap {
	c := make(Bitmap, len(b))
	copy(c, b)
	return c
}

// IndexesInRange returns the indexes in [from, to] (inclusive) whose bit equals set.
func (b Bitmap) IndexesInRange(set bool, from, to uint) []int {
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
func (b Bitmap) String() string {
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
