package msgpackframe

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// Read splits a stream of values exactly where go-msgpack's encoder put
// them, for every kind of value, nested.
func TestReadSplitsValues(t *testing.T) {
	h := &codec.MsgpackHandle{WriteExt: true}
	values := []any{
		nil, true, 7, -3, 300, -70000, uint64(1) << 40, 1.5, float32(2.5), "", "short",
		string(bytes.Repeat([]byte("x"), 300)), string(bytes.Repeat([]byte("y"), 70000)),
		[]byte{1, 2, 3}, bytes.Repeat([]byte{9}, 70000), time.Unix(1700000000, 5).UTC(),
		[]any{1, "a", []any{map[string]any{"k": []any{nil}}}},
		map[string]any{"a": 1, "b": map[string]any{"c": []any{1, 2, 3}}},
		make([]int, 20), make([]int, 70000),
	}
	var stream bytes.Buffer
	var ends []int
	enc := codec.NewEncoder(&stream, h)
	for _, v := range values {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, stream.Len())
	}
	all := stream.Bytes()
	r := bufio.NewReader(bytes.NewReader(all))
	prev := 0
	for i, end := range ends {
		got, err := Read(r, nil)
		if err != nil {
			t.Fatalf("value %d (%T): %v", i, values[i], err)
		}
		if !bytes.Equal(got, all[prev:end]) {
			t.Fatalf("value %d (%T): read %d bytes, want %d", i, values[i], len(got), end-prev)
		}
		prev = end
	}
	if _, err := Read(r, nil); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
}

// A value whose header claims more than the stream holds is an unexpected
// EOF, and reading it costs what arrived.
func TestReadClaimIsNotAllocated(t *testing.T) {
	for _, in := range [][]byte{
		{0xc9, 0x7f, 0xff, 0xff, 0xff, 0xff, 1, 2}, // ext32
		{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'},        // str32
		{0xdd, 0xff, 0xff, 0xff, 0xff, 1, 2, 3},    // array32
		{0x81, 0xa1},                               // a map cut short
	} {
		got, err := Read(bufio.NewReader(bytes.NewReader(in)), nil)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("% x: %v, want io.ErrUnexpectedEOF", in, err)
		}
		if cap(got) > 1<<17 {
			t.Fatalf("% x: buffer grew to %d bytes", in, cap(got))
		}
	}
	if _, err := Read(bufio.NewReader(bytes.NewReader([]byte{0xc1})), nil); err == nil {
		t.Fatal("0xc1 (never used) read as a value")
	}
}
