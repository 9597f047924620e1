package sim

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/drover-project/drover/internal/structs"
)

// mp builds msgpack bytes by hand, so every format the spec has is covered,
// not just those go-msgpack happens to write.
func mp(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch v := p.(type) {
		case byte:
			b = append(b, v)
		case int: // a code's 1-byte operand or a fixint
			b = append(b, byte(v))
		case uint16:
			b = binary.BigEndian.AppendUint16(b, v)
		case uint32:
			b = binary.BigEndian.AppendUint32(b, v)
		case uint64:
			b = binary.BigEndian.AppendUint64(b, v)
		case string:
			b = append(b, v...)
		case []byte:
			b = append(b, v...)
		default:
			panic("mp: unsupported part")
		}
	}
	return b
}

// mpValues are one value of every msgpack format family, nested ones
// holding values of other families.
func mpValues() map[string][]byte {
	long := strings.Repeat("x", 70000) // longer than any read buffer
	return map[string][]byte{
		"positive fixint": mp(0x05),
		"negative fixint": mp(0xff),
		"nil":             mp(0xc0),
		"false":           mp(0xc2),
		"true":            mp(0xc3),
		"fixstr":          mp(0xa3, "abc"),
		"empty fixstr":    mp(0xa0),
		"str8":            mp(0xd9, 40, strings.Repeat("s", 40)),
		"str16":           mp(0xda, uint16(300), strings.Repeat("s", 300)),
		"str32":           mp(0xdb, uint32(len(long)), long),
		"bin8":            mp(0xc4, 3, "\x00\x01\x02"),
		"bin16":           mp(0xc5, uint16(3), "\x00\x01\x02"),
		"bin32":           mp(0xc6, uint32(3), "\x00\x01\x02"),
		"float32":         mp(0xca, uint32(0x3fc00000)),
		"float64":         mp(0xcb, uint64(0xbff8000000000000)),
		"uint8":           mp(0xcc, 200),
		"uint16":          mp(0xcd, uint16(60000)),
		"uint32":          mp(0xce, uint32(4000000000)),
		"uint64":          mp(0xcf, uint64(1<<63)),
		"int8":            mp(0xd0, 0x80),
		"int16":           mp(0xd1, uint16(0x8000)),
		"int32":           mp(0xd2, uint32(0xfffffffe)),
		"int64":           mp(0xd3, uint64(0xfffffffffffffffe)),
		"fixext1":         mp(0xd4, 1, 0xaa),
		"fixext2":         mp(0xd5, 1, "\xaa\xbb"),
		"fixext4":         mp(0xd6, 0xff, "\xaa\xbb\xcc\xdd"), // the timestamp type, -1
		"fixext8":         mp(0xd7, 0xff, "12345678"),
		"fixext16":        mp(0xd8, 2, "0123456789abcdef"),
		"ext8":            mp(0xc7, 12, 0xff, "123456789abc"),
		"ext16":           mp(0xc8, uint16(3), 5, "abc"),
		"ext32":           mp(0xc9, uint32(3), 5, "abc"),
		"empty fixarray":  mp(0x90),
		"fixarray":        mp(0x93, 0x01, 0xa1, "a", 0x91, 0xc0),
		"array16":         mp(0xdc, uint16(2), 0xcb, uint64(0), 0xd4, 1, 0xaa),
		"array32":         mp(0xdd, uint32(2), 0xc4, 1, "z", 0xe0),
		"empty fixmap":    mp(0x80),
		"fixmap":          mp(0x82, 0xa1, "a", 0x81, 0xa1, "b", 0x92, 0xc3, 0xc2, 0xa1, "c", 0xd3, uint64(1)),
		"map16":           mp(0xde, uint16(1), 0x01, 0xdc, uint16(1), 0xde, uint16(0)),
		"map32":           mp(0xdf, uint32(1), 0xc0, 0xdf, uint32(1), 0xa1, "k", 0xc9, uint32(1), 1, "e"),
	}
}

func testReader(b []byte, bufSize int) *mpReader {
	return newMPReader(bufio.NewReaderSize(bytes.NewReader(b), bufSize))
}

// skip must leave the stream at the next value for every format, with
// buffers smaller and larger than the values.
func TestMPReaderSkipsEveryFormat(t *testing.T) {
	for name, v := range mpValues() {
		for _, size := range []int{16, 64 << 10} {
			r := testReader(mp(v, v, v, 0x2a), size)
			r.skip()
			r.skipStream() // header by header, whatever the buffer holds
			r.skip()
			if got := r.readUint(); got != 42 || r.done() != nil {
				t.Errorf("%s (buffer %d): after skipping, read %d, err %v", name, size, got, r.done())
			}
		}
	}
}

// skip must agree with go-msgpack on values go-msgpack writes: nested maps
// and slices of mixed types, times, negative numbers, floats, nils.
func TestMPReaderSkipsGoMsgpackValues(t *testing.T) {
	values := []any{
		map[string]any{"a": []any{1, -1, -200, 3.5, float32(1.5), nil, "s", []byte{1, 2}, true}, "b": map[string]any{"c": map[string]any{}}},
		time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		testJob(3),
		testAlloc(testJob(3), 1, true),
		int64(-1 << 40), uint64(1 << 63), -0.25, strings.Repeat("y", 1<<17),
	}
	for _, v := range values {
		var buf bytes.Buffer
		enc := codec.NewEncoder(&buf, structs.MsgpackHandle)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		buf.WriteByte(0x2a)
		for _, size := range []int{16, 1 << 20} { // header by header; from the buffer
			r := testReader(buf.Bytes(), size)
			r.skip()
			if got := r.readUint(); got != 42 || r.done() != nil {
				t.Errorf("%T (buffer %d): after skipping, read %d, err %v", v, size, got, r.done())
			}
		}
	}
}

// skipLen must find the end of every format, and never claim a value a
// buffer holds only part of.
func TestSkipLen(t *testing.T) {
	for name, v := range mpValues() {
		if n, ok := skipLen(mp(v, 0x2a)); !ok || n != len(v) {
			t.Errorf("%s: skipLen = %d, %v; want %d", name, n, ok, len(v))
		}
		for i := 0; i < len(v); i++ {
			if n, ok := skipLen(v[:i]); ok {
				t.Fatalf("%s: skipLen of %d of %d bytes = %d, true", name, i, len(v), n)
			}
		}
	}
	if _, ok := skipLen(mp(0x91, 0xc1)); ok {
		t.Error("skipLen accepted 0xc1")
	}
}

func TestMPReaderReadsUints(t *testing.T) {
	for _, c := range []struct {
		in   []byte
		want uint64
	}{
		{mp(0x00), 0}, {mp(0x7f), 127}, {mp(0xc0), 0},
		{mp(0xcc, 0xff), 255}, {mp(0xcd, uint16(65535)), 65535}, {mp(0xce, uint32(1<<32-1)), 1<<32 - 1}, {mp(0xcf, uint64(1<<64-1)), 1<<64 - 1},
		{mp(0xd0, 0x7f), 127}, {mp(0xd1, uint16(0x7fff)), 0x7fff}, {mp(0xd2, uint32(1<<31-1)), 1<<31 - 1}, {mp(0xd3, uint64(1<<63-1)), 1<<63 - 1},
	} {
		r := testReader(mp(c.in, 0x2a), 16)
		if got := r.readUint(); got != c.want || r.done() != nil {
			t.Errorf("% x: got %d, err %v; want %d", c.in, got, r.done(), c.want)
		}
		if r.readUint() != 42 {
			t.Errorf("% x: out of step", c.in)
		}
	}
}

// A value of the wrong type is an error, as it is to go-msgpack, but it is
// skipped whole: the next value still reads.
func TestMPReaderMismatchStaysInStep(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		read func(*mpReader)
	}{
		{"negative fixint as uint", mp(0xff), func(r *mpReader) { r.readUint() }},
		{"negative int8 as uint", mp(0xd0, 0x80), func(r *mpReader) { r.readUint() }},
		{"negative int64 as uint", mp(0xd3, uint64(1<<63)), func(r *mpReader) { r.readUint() }},
		{"float as uint", mp(0xcb, uint64(0)), func(r *mpReader) { r.readUint() }},
		{"string as uint", mp(0xa1, "1"), func(r *mpReader) { r.readUint() }},
		{"map as string", mp(0x81, 0xa1, "a", 0x92, 1, 2), func(r *mpReader) { r.readString() }},
		{"int as string", mp(0xcd, uint16(1)), func(r *mpReader) { r.readShared() }},
		{"array as map", mp(0x91, 0x81, 1, 2), func(r *mpReader) { r.readMapLen() }},
		{"ext as array", mp(0xc7, 2, 1, "ab"), func(r *mpReader) { r.readArrayLen() }},
	} {
		r := testReader(mp(c.in, 0x2a), 16)
		c.read(r)
		if r.done() == nil {
			t.Errorf("%s: no error", c.name)
		}
		r.reset()
		if got := r.readUint(); got != 42 || r.done() != nil {
			t.Errorf("%s: next value %d, err %v", c.name, got, r.done())
		}
	}
}

func TestMPReaderReadsStrings(t *testing.T) {
	long := strings.Repeat("q", 100)
	for _, in := range [][]byte{
		mp(0xa3, "abc"), mp(0xd9, 3, "abc"), mp(0xda, uint16(3), "abc"), mp(0xdb, uint32(3), "abc"),
		mp(0xc4, 3, "abc"), mp(0xc5, uint16(3), "abc"), mp(0xc6, uint32(3), "abc"),
	} {
		r := testReader(in, 16)
		if got := r.readShared(); got != "abc" || r.done() != nil {
			t.Errorf("% x: got %q, err %v", in, got, r.done())
		}
	}
	r := testReader(mp(0xd9, 100, long, 0xc0), 16) // longer than the buffer
	if got := r.readString(); got != long || r.readString() != "" || r.done() != nil {
		t.Errorf("long string: got %q, err %v", got, r.done())
	}
}

func TestMPReaderStreamErrors(t *testing.T) {
	r := testReader(nil, 16)
	r.skip()
	if !errors.Is(r.done(), io.EOF) {
		t.Errorf("empty stream: err %v, want EOF", r.done())
	}
	r = testReader(mp(0x92, 0x01), 16) // cut inside a value
	r.skip()
	if !errors.Is(r.done(), io.ErrUnexpectedEOF) {
		t.Errorf("cut stream: err %v, want unexpected EOF", r.done())
	}
	r = testReader(mp(0xdb, uint32(10), "abc"), 16)
	r.readString()
	if !errors.Is(r.done(), io.ErrUnexpectedEOF) {
		t.Errorf("cut string: err %v, want unexpected EOF", r.done())
	}
	r = testReader(mp(0x91, 0xc1, 0x01), 16) // a code with no length: the stream is lost
	r.skip()
	r.reset()
	if r.done() == nil || r.ok() {
		t.Errorf("0xc1: err %v, ok %v", r.done(), r.ok())
	}
}
