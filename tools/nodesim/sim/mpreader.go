package sim

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// mpReader reads msgpack values straight from a connection's read buffer
// for the hand-written decoders of the answers nodesim decodes most
// (answer_decode.go). go-msgpack's reflection decoder, given a stream,
// reads it a byte at a time through interfaces and walks each skipped field
// (each allocation's whole job) the same way; here a byte is a method call on
// a concrete *bufio.Reader, a skipped string is one Discard, and field names
// are compared in place without being copied.
//
// A value of an unexpected type is skipped whole and remembered as the
// decoding error (err), so the stream stays in step with the server's
// answers; a read error (ioErr) ends the connection and is sticky.
type mpReader struct {
	r       *bufio.Reader
	err     error  // first value of an unexpected type since reset
	ioErr   error  // the stream failed: nothing more can be read
	started bool   // a byte of the current top-level value has been read
	scratch []byte // strings longer than r's buffer
	strs    map[string]string
}

// maxInterned bounds mpReader.strs: the strings worth sharing (namespaces,
// statuses, job, group and task names) are few; allocation IDs are not
// interned.
const maxInterned = 4096

func newMPReader(r *bufio.Reader) *mpReader {
	return &mpReader{r: r, strs: map[string]string{}}
}

// reset prepares to read the next top-level value.
func (r *mpReader) reset() { r.err, r.started = nil, false }

// done is the error of the value just read: the stream's, else the first
// value of an unexpected type.
func (r *mpReader) done() error {
	if r.ioErr != nil {
		return r.ioErr
	}
	return r.err
}

// ok reports whether reading may go on (the stream has not failed).
func (r *mpReader) ok() bool { return r.ioErr == nil }

func (r *mpReader) failIO(err error) {
	if r.ioErr != nil {
		return
	}
	if err == io.EOF && r.started {
		err = io.ErrUnexpectedEOF // the stream ended inside a value
	}
	r.ioErr = err
}

// readByte reads one byte; after a read error it returns the nil code, a
// whole value, so callers unwind without special cases.
func (r *mpReader) readByte() byte {
	if r.ioErr != nil {
		return mpNil
	}
	b, err := r.r.ReadByte()
	if err != nil {
		r.failIO(err)
		return mpNil
	}
	r.started = true
	return b
}

// readN reads n bytes, valid only until the next read.
func (r *mpReader) readN(n uint64) []byte {
	if r.ioErr != nil || n == 0 {
		return nil
	}
	if n <= uint64(r.r.Size()) {
		b, err := r.r.Peek(int(n))
		if err != nil {
			r.failIO(err)
			return nil
		}
		r.r.Discard(len(b))
		return b
	}
	if uint64(cap(r.scratch)) < n {
		r.scratch = make([]byte, n)
	}
	b := r.scratch[:n]
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.failIO(err)
		return nil
	}
	return b
}

func (r *mpReader) discard(n uint64) {
	if r.ioErr != nil || n == 0 {
		return
	}
	if _, err := r.r.Discard(int(n)); err != nil {
		r.failIO(err)
	}
}

// readBE reads a big-endian unsigned integer of size bytes (1, 2, 4 or 8).
func (r *mpReader) readBE(size int) uint64 {
	b := r.readN(uint64(size))
	if len(b) < size {
		return 0
	}
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(b))
	case 4:
		return uint64(binary.BigEndian.Uint32(b))
	}
	return binary.BigEndian.Uint64(b)
}

// msgpack format codes (https://github.com/msgpack/msgpack/blob/master/spec.md).
const (
	mpNil                                 = 0xc0
	mpNeverUsed                           = 0xc1
	mpFalse, mpTrue                       = 0xc2, 0xc3
	mpBin8, mpBin16, mpBin32              = 0xc4, 0xc5, 0xc6
	mpExt8, mpExt16, mpExt32              = 0xc7, 0xc8, 0xc9
	mpFloat32, mpFloat64                  = 0xca, 0xcb
	mpUint8, mpUint16, mpUint32, mpUint64 = 0xcc, 0xcd, 0xce, 0xcf
	mpInt8, mpInt16, mpInt32, mpInt64     = 0xd0, 0xd1, 0xd2, 0xd3
	mpFixExt1, mpFixExt16                 = 0xd4, 0xd8
	mpStr8, mpStr16, mpStr32              = 0xd9, 0xda, 0xdb
	mpArray16, mpArray32                  = 0xdc, 0xdd
	mpMap16, mpMap32                      = 0xde, 0xdf
)

var errNeverUsed = errors.New("msgpack: invalid code 0xc1")

// skip reads past one value, however nested, without recursion: at once if
// the read buffer holds all of it, else header by header.
func (r *mpReader) skip() {
	if !r.skipBuffered() {
		r.skipStream()
	}
}

// skipBuffered skips the next value if the read buffer holds all of it.
func (r *mpReader) skipBuffered() bool {
	if r.ioErr != nil {
		return false
	}
	if r.r.Buffered() == 0 {
		r.r.Peek(1) // fill the buffer; an error is met again by skipStream
	}
	buf, _ := r.r.Peek(r.r.Buffered())
	n, ok := skipLen(buf)
	if ok {
		r.r.Discard(n)
		r.started = true
	}
	return ok
}

// skipStream skips the next value reading it header by header.
func (r *mpReader) skipStream() {
	for pending := uint64(1); pending > 0 && r.ioErr == nil; pending-- {
		b := r.readByte()
		switch {
		case b <= 0x7f || b >= 0xe0: // fixints
		case b <= 0x8f:
			pending += 2 * uint64(b&0x0f)
		case b <= 0x9f:
			pending += uint64(b & 0x0f)
		case b <= 0xbf:
			r.discard(uint64(b & 0x1f))
		case b == mpNil || b == mpFalse || b == mpTrue:
		case b == mpNeverUsed:
			r.failIO(errNeverUsed) // no length to skip: the stream is lost
		case b == mpBin8 || b == mpStr8:
			r.discard(r.readBE(1))
		case b == mpBin16 || b == mpStr16:
			r.discard(r.readBE(2))
		case b == mpBin32 || b == mpStr32:
			r.discard(r.readBE(4))
		case b == mpExt8:
			r.discard(r.readBE(1) + 1) // + the type byte
		case b == mpExt16:
			r.discard(r.readBE(2) + 1)
		case b == mpExt32:
			r.discard(r.readBE(4) + 1)
		case b == mpFloat32:
			r.discard(4)
		case b == mpFloat64:
			r.discard(8)
		case b >= mpUint8 && b <= mpInt64:
			r.discard(1 << ((b - mpUint8) & 3)) // 1, 2, 4, 8 bytes
		case b >= mpFixExt1 && b <= mpFixExt16:
			r.discard(1 + 1<<(b-mpFixExt1)) // type byte + 1..16 bytes
		case b == mpArray16:
			pending += r.readBE(2)
		case b == mpArray32:
			pending += r.readBE(4)
		case b == mpMap16:
			pending += 2 * r.readBE(2)
		case b == mpMap32:
			pending += 2 * r.readBE(4)
		}
	}
}

// mismatch handles a value of code b that is not of the type wanted: the
// value (its first byte already read) is skipped and the error kept.
func (r *mpReader) mismatch(b byte, want string) {
	if r.ioErr != nil {
		return
	}
	r.r.UnreadByte() // the byte just read by readByte: cannot fail
	r.skip()
	if r.err == nil {
		r.err = fmt.Errorf("msgpack: cannot decode %s from code 0x%02x", want, b)
	}
}

// readUint reads an unsigned integer as go-msgpack decodes one into a
// uint64: any integer format holding a non-negative value; nil is 0.
func (r *mpReader) readUint() uint64 {
	b := r.readByte()
	switch {
	case b <= 0x7f:
		return uint64(b)
	case b == mpNil:
		return 0
	case b >= mpUint8 && b <= mpUint64:
		return r.readBE(1 << (b - mpUint8))
	case b >= mpInt8 && b <= mpInt64:
		size := 1 << (b - mpInt8)
		v := r.readBE(size)
		if v>>(8*size-1)&1 == 1 { // negative
			if r.err == nil {
				r.err = fmt.Errorf("msgpack: negative integer for an unsigned one (code 0x%02x)", b)
			}
			return 0
		}
		return v
	}
	r.mismatch(b, "an unsigned integer")
	return 0
}

// readStr reads a string (str or bin, as go-msgpack decodes either into a
// string; nil is empty), valid only until the next read. ok is false for a
// value of another type, which was skipped.
func (r *mpReader) readStr() (s []byte, ok bool) {
	b := r.readByte()
	var n uint64
	switch {
	case b >= 0xa0 && b <= 0xbf:
		n = uint64(b & 0x1f)
	case b == mpNil:
		return nil, true
	case b == mpStr8 || b == mpBin8:
		n = r.readBE(1)
	case b == mpStr16 || b == mpBin16:
		n = r.readBE(2)
	case b == mpStr32 || b == mpBin32:
		n = r.readBE(4)
	default:
		r.mismatch(b, "a string")
		return nil, false
	}
	return r.readN(n), true
}

// readString reads a string value of its own.
func (r *mpReader) readString() string {
	b, _ := r.readStr()
	return string(b)
}

// readShared reads a string that many values repeat (a status, a name),
// sharing one copy of it.
func (r *mpReader) readShared() string {
	b, _ := r.readStr()
	if s, ok := r.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(r.strs) < maxInterned && len(s) <= 128 {
		r.strs[s] = s
	}
	return s
}

// readMapLen reads a map header: its number of entries, or -1 for nil or a
// value of another type (skipped).
func (r *mpReader) readMapLen() int {
	b := r.readByte()
	switch {
	case b >= 0x80 && b <= 0x8f:
		return int(b & 0x0f)
	case b == mpMap16:
		return int(r.readBE(2))
	case b == mpMap32:
		return int(r.readBE(4))
	case b != mpNil:
		r.mismatch(b, "a map")
	}
	return -1
}

// readArrayLen reads an array header: its number of elements, or -1 for nil
// or a value of another type (skipped).
func (r *mpReader) readArrayLen() int {
	b := r.readByte()
	switch {
	case b >= 0x90 && b <= 0x9f:
		return int(b & 0x0f)
	case b == mpArray16:
		return int(r.readBE(2))
	case b == mpArray32:
		return int(r.readBE(4))
	case b != mpNil:
		r.mismatch(b, "an array")
	}
	return -1
}

// readKey reads a struct field's name (a map key), valid only until the next
// read; ok is false if the key is not a string, in which case the caller
// skips its value.
func (r *mpReader) readKey() (name []byte, ok bool) { return r.readStr() }
