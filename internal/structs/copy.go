package structs

import (
	"bytes"
	"reflect"

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

// Encode writes a Raft log entry: one type byte then the msgpack body.
func Encode(t MessageType, msg any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte(uint8(t))
	err := codec.NewEncoder(&buf, MsgpackHandle).Encode(msg)
	return buf.Bytes(), err
}

// Decode reads a msgpack body into out.
func Decode(buf []byte, out any) error {
	return codec.NewDecoder(bytes.NewReader(buf), MsgpackHandle).Decode(out)
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
