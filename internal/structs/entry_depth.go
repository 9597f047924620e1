package structs

import (
	"encoding/binary"
	"fmt"
)

// MaxEntryDepth bounds how deeply a Raft entry's msgpack body may nest maps
// and arrays. The FSM's decoder (go-msgpack) refuses 1,024 levels, and an
// entry that cannot be decoded once committed is applied by no server: a
// poison entry. Servers check every entry against this bound before they
// propose it; half the decoder's limit leaves room for the wrappers that
// carry a job inside other entries (a plan's allocations, a batch).
const MaxEntryDepth = 512

// CheckEntryDepth walks the msgpack value in buf without decoding it and
// returns an error if it nests more than MaxEntryDepth levels or is
// truncated. It allocates nothing for bodies within the bound but a small
// stack, and is linear in the number of values, not in their bytes.
func CheckEntryDepth(buf []byte) error {
	// pending[i] is how many values are still to be read in the container
	// open at depth i+1; the top level is one value.
	pending := make([]uint64, 1, 16)
	pending[0] = 1
	pos := 0
	for len(pending) > 0 {
		top := len(pending) - 1
		if pending[top] == 0 {
			pending = pending[:top]
			continue
		}
		pending[top]--
		if pos >= len(buf) {
			return fmt.Errorf("msgpack body truncated at byte %d", pos)
		}
		b := buf[pos]
		pos++
		var skip, children uint64 // bytes of payload to skip; values inside
		container := false
		switch {
		case b <= 0x7f || b >= 0xe0: // positive and negative fixint
		case b <= 0x8f: // fixmap
			children, container = 2*uint64(b&0x0f), true
		case b <= 0x9f: // fixarray
			children, container = uint64(b&0x0f), true
		case b <= 0xbf: // fixstr
			skip = uint64(b & 0x1f)
		default:
			var n, width uint64
			switch b {
			case 0xc0, 0xc2, 0xc3: // nil, false, true
			case 0xc4, 0xd9: // bin8, str8
				width = 1
			case 0xc5, 0xda: // bin16, str16
				width = 2
			case 0xc6, 0xdb: // bin32, str32
				width = 4
			case 0xc7: // ext8: length, type, data
				width, skip = 1, 1
			case 0xc8:
				width, skip = 2, 1
			case 0xc9:
				width, skip = 4, 1
			case 0xca, 0xd2, 0xce: // float32, int32, uint32
				skip = 4
			case 0xcb, 0xd3, 0xcf: // float64, int64, uint64
				skip = 8
			case 0xcc, 0xd0: // uint8, int8
				skip = 1
			case 0xcd, 0xd1: // uint16, int16
				skip = 2
			case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16 (+ type)
				skip = 1 + 1<<(b-0xd4)
			case 0xdc, 0xde: // array16, map16
				width, container = 2, true
			case 0xdd, 0xdf: // array32, map32
				width, container = 4, true
			default: // 0xc1 is never used
				return fmt.Errorf("msgpack body has invalid byte 0x%02x at %d", b, pos-1)
			}
			if width > 0 {
				if uint64(len(buf)-pos) < width {
					return fmt.Errorf("msgpack body truncated at byte %d", pos)
				}
				switch width {
				case 1:
					n = uint64(buf[pos])
				case 2:
					n = uint64(binary.BigEndian.Uint16(buf[pos:]))
				case 4:
					n = uint64(binary.BigEndian.Uint32(buf[pos:]))
				}
				pos += int(width)
				if container {
					children = n
					if b == 0xde || b == 0xdf {
						children = 2 * n
					}
				} else {
					skip += n
				}
			}
		}
		if skip > uint64(len(buf)-pos) {
			return fmt.Errorf("msgpack body truncated at byte %d", pos)
		}
		pos += int(skip)
		if container {
			// This container is at depth len(pending).
			if len(pending) > MaxEntryDepth {
				return fmt.Errorf("the entry nests more than %d levels of maps and lists", MaxEntryDepth)
			}
			if children > 0 {
				pending = append(pending, children)
			}
		}
	}
	return nil
}
