// Package msgpackframe reads one whole msgpack value from a stream into
// memory, so that it can then be decoded from bytes.
//
// go-msgpack, decoding from an io.Reader, can allocate the length a header
// claims before it reads the bytes (a timestamp extension it skips, at
// least): six bytes (0xc9, a 32-bit length, the timestamp type) make it
// allocate up to 4 GiB. The
// RPC port and the snapshot restore read such streams. Read grows its
// buffer only as the bytes arrive, so memory follows what the peer sent,
// not what it claimed; decoding from the bytes then cannot over-allocate
// either (a claim longer than the buffer is an error).
//
// It must never decode: it only finds where a value ends, iteratively (no
// recursion, whatever the nesting).
package msgpackframe

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// chunk is the most Read appends at once for a claimed length.
const chunk = 64 << 10

// Read appends the next msgpack value of r to dst and returns the extended
// slice. At a clean end of stream (no byte of a value read) it returns
// io.EOF; a stream that ends inside a value is io.ErrUnexpectedEOF.
func Read(r *bufio.Reader, dst []byte) ([]byte, error) {
	start := len(dst)
	pending := uint64(1) // values still to read, nested ones included
	for pending > 0 {
		c, err := r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && len(dst) > start {
				err = io.ErrUnexpectedEOF
			}
			return dst, err
		}
		dst = append(dst, c)
		pending--
		var lenBytes int          // size of a length field that follows
		var fixed uint64          // payload bytes that follow
		var perLen, plus uint64   // payload or items per unit of the length field, plus a constant
		var items, perItem uint64 // items of a fixed container, per length unit of a variable one
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c <= 0x8f: // fixmap
			items = uint64(c&0x0f) * 2
		case c <= 0x9f: // fixarray
			items = uint64(c & 0x0f)
		case c <= 0xbf: // fixstr
			fixed = uint64(c & 0x1f)
		case c == 0xc1:
			return dst, fmt.Errorf("msgpack: invalid byte 0xc1 at offset %d", len(dst)-start-1)
		case c == 0xc4 || c == 0xd9: // bin8, str8
			lenBytes, perLen = 1, 1
		case c == 0xc5 || c == 0xda:
			lenBytes, perLen = 2, 1
		case c == 0xc6 || c == 0xdb:
			lenBytes, perLen = 4, 1
		case c == 0xc7: // ext8: length, type, data
			lenBytes, perLen, plus = 1, 1, 1
		case c == 0xc8:
			lenBytes, perLen, plus = 2, 1, 1
		case c == 0xc9:
			lenBytes, perLen, plus = 4, 1, 1
		case c == 0xca || c == 0xce || c == 0xd2: // float32, uint32, int32
			fixed = 4
		case c == 0xcb || c == 0xcf || c == 0xd3:
			fixed = 8
		case c == 0xcc || c == 0xd0:
			fixed = 1
		case c == 0xcd || c == 0xd1:
			fixed = 2
		case c >= 0xd4 && c <= 0xd8: // fixext 1..16: type, data
			fixed = 1 + 1<<(c-0xd4)
		case c == 0xdc: // array16
			lenBytes, perItem = 2, 1
		case c == 0xdd:
			lenBytes, perItem = 4, 1
		case c == 0xde: // map16: key and value per entry
			lenBytes, perItem = 2, 2
		case c == 0xdf:
			lenBytes, perItem = 4, 2
		}
		if lenBytes > 0 {
			var n uint64
			for i := 0; i < lenBytes; i++ {
				b, err := r.ReadByte()
				if err != nil {
					return dst, unexpected(err)
				}
				dst = append(dst, b)
				n = n<<8 | uint64(b)
			}
			fixed = n*perLen + plus
			items = n * perItem
		}
		pending += items
		if dst, err = copyN(r, dst, fixed); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// copyN appends the next n bytes of r to dst, growing dst a chunk at a time.
func copyN(r *bufio.Reader, dst []byte, n uint64) ([]byte, error) {
	for n > 0 {
		k := int(min(n, chunk))
		l := len(dst)
		dst = append(dst, make([]byte, k)...)
		if _, err := io.ReadFull(r, dst[l:]); err != nil {
			return dst[:l], unexpected(err)
		}
		n -= uint64(k)
	}
	return dst, nil
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
