package sim

import "encoding/binary"

// skipLen returns the length of the msgpack value at the start of b, or
// false if b does not hold all of it (or it has a code no value has). It
// lets mpReader.skip step over a value already in the read buffer, such as
// an allocation's whole job, with index arithmetic on a slice instead of a
// read call per header.
func skipLen(b []byte) (int, bool) {
	i := 0
	for pending := uint64(1); pending > 0; pending-- {
		if i >= len(b) {
			return 0, false
		}
		c := b[i]
		i++
		var n uint64 // payload bytes after the header
		switch {
		case c <= 0x7f || c >= 0xe0: // fixints
		case c <= 0x8f:
			pending += 2 * uint64(c&0x0f)
		case c <= 0x9f:
			pending += uint64(c & 0x0f)
		case c <= 0xbf:
			n = uint64(c & 0x1f)
		case c == mpNil || c == mpFalse || c == mpTrue:
		case c == mpNeverUsed:
			return 0, false
		case c == mpBin8 || c == mpStr8 || c == mpExt8:
			if i+1 > len(b) {
				return 0, false
			}
			n = uint64(b[i])
			i++
			if c == mpExt8 {
				n++ // the type byte
			}
		case c == mpBin16 || c == mpStr16 || c == mpExt16 || c == mpArray16 || c == mpMap16:
			if i+2 > len(b) {
				return 0, false
			}
			l := uint64(binary.BigEndian.Uint16(b[i:]))
			i += 2
			n, pending = lenOrCount(c, l, pending)
		case c == mpBin32 || c == mpStr32 || c == mpExt32 || c == mpArray32 || c == mpMap32:
			if i+4 > len(b) {
				return 0, false
			}
			l := uint64(binary.BigEndian.Uint32(b[i:]))
			i += 4
			n, pending = lenOrCount(c, l, pending)
		case c == mpFloat32:
			n = 4
		case c == mpFloat64:
			n = 8
		case c >= mpUint8 && c <= mpInt64:
			n = 1 << ((c - mpUint8) & 3)
		case c >= mpFixExt1 && c <= mpFixExt16:
			n = 1 + 1<<(c-mpFixExt1)
		}
		if n > uint64(len(b)-i) {
			return 0, false
		}
		i += int(n)
	}
	return i, true
}

// lenOrCount applies a 16- or 32-bit length l of code c: the payload of a
// str, bin or ext (plus an ext's type byte), or values more to skip for an
// array or map.
func lenOrCount(c byte, l, pending uint64) (n, morePending uint64) {
	switch c {
	case mpArray16, mpArray32:
		return 0, pending + l
	case mpMap16, mpMap32:
		return 0, pending + 2*l
	case mpExt16, mpExt32:
		return l + 1, pending
	}
	return l, pending
}
