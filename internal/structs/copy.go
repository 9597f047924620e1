package structs

import (
	"bytes"
	"reflect"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// MsgpackHandle is the codec used for Raft entries, snapshots and RPC.
var MsgpackHandle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	h.Raw = true // pre-encoded values (alloc_wire.go)
	return h
}()

// encoder is a reusable msgpack encoder and its growing buffer.
type encoder struct {
	buf bytes.Buffer
	enc *codec.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = codec.NewEncoder(&e.buf, MsgpackHandle)
	return e
}}

// maxPooledEncodeBuffer keeps a rare huge entry's buffer out of the pool.
const maxPooledEncodeBuffer = 8 << 20

// Encode writes a Raft log entry: one type byte then the msgpack body. The
// entry is encoded into a pooled buffer and returned as an exact-size copy:
// Raft keeps entries in memory while they are in flight and cached, and a
// buffer grown by doubling was up to twice the entry's size.
func Encode(t MessageType, msg any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	e.buf.Reset()
	e.buf.WriteByte(uint8(t))
	e.enc.Reset(&e.buf)
	err := e.enc.Encode(msg)
	out := make([]byte, e.buf.Len())
	copy(out, e.buf.Bytes())
	if e.buf.Cap() <= maxPooledEncodeBuffer {
		encoders.Put(e)
	}
	return out, err
}

// entryHandle decodes Raft entries: MsgpackHandle's settings, plus map keys
// interned per entry, so the thousand score maps of a plan entry share their
// handful of key strings ("binpack", "job-anti-affinity", ...) instead of
// each holding copies for as long as the allocations are stored.
var entryHandle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	h.InternString = true
	return h
}()

// Decode reads a msgpack body (a Raft entry's) into out.
func Decode(buf []byte, out any) error {
	return codec.NewDecoderBytes(buf, entryHandle).Decode(out)
}

// mustDeepCopy copies in into out through msgpack. It is used for the rare
// deep copies of large spec trees; hot paths copy by hand.
func mustDeepCopy(in, out any) {
	var buf bytes.Buffer
	if err := codec.NewEncoder(&buf, MsgpackHandle).Encode(in); err != nil {
		panic("structs: deep copy encode: " + err.Error())
	}
	if err := codec.NewDecoder(&buf, MsgpackHandle).Decode(out); err != nil {
		panic("structs: deep copy decode: " + err.Error())
	}
}
