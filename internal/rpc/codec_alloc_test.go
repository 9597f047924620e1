package rpc

import (
	"bytes"
	"net/rpc"
	"testing"
)

// A header claiming a 4 GiB extension, string or binary value costs what
// was sent, not what was claimed: go-msgpack decoding straight from the
// connection allocated the claimed length before reading a byte of it.
func TestCodecClaimedLengthIsNotAllocated(t *testing.T) {
	for name, claim := range map[string][]byte{
		"ext32 time": {0xc9, 0x7f, 0xff, 0xff, 0xff, 0xff}, // type -1: a timestamp
		"str32":      {0xdb, 0xff, 0xff, 0xff, 0xff},
		"bin32":      {0xc6, 0xff, 0xff, 0xff, 0xff},
	} {
		// A field the header does not have: go-msgpack skips its value.
		in := append([]byte{0x81, 0xa1, 'X'}, claim...)
		var err error
		n := allocated(func() {
			c := NewServerCodec(&fuzzConn{r: bytes.NewReader(in)})
			var req rpc.Request
			err = c.ReadRequestHeader(&req)
		})
		if err == nil {
			t.Fatalf("%s: a truncated header decoded", name)
		}
		if n > 1<<20 {
			t.Fatalf("%s: reading a %d-byte header allocated %d bytes", name, len(in), n)
		}
	}
}
