package sim

import (
	"net/rpc"
	"testing"
)

// loopConn is a connection whose reads replay the same bytes forever: a
// server sending the same answer again and again, without goroutines or
// syscalls, so a benchmark measures the client's decoding alone. Reads
// return at most 4 KiB, like a network stream arriving in segments.
type loopConn struct {
	b   []byte
	off int
}

func (c *loopConn) Read(p []byte) (int, error) {
	if c.off == len(c.b) {
		c.off = 0
	}
	n := copy(p[:min(len(p), 4<<10)], c.b[c.off:])
	c.off += n
	return n, nil
}

func (c *loopConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *loopConn) Close() error                { return nil }

// benchDecode reads b.N answers through the client codec nodesim's pools
// use, each into a fresh reply as nodesim does.
func benchDecode[T any](b *testing.B, wire []byte) {
	c := newClientCodec(&loopConn{b: wire})
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var resp rpc.Response
		if err := c.ReadResponseHeader(&resp); err != nil {
			b.Fatal(err)
		}
		var reply T
		if err := c.ReadResponseBody(&reply); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodePullAnswer(b *testing.B) {
	benchDecode[pullAnswer](b, encodeResponse(b, 1, "Node.GetClientAllocs", testPullAnswer()))
}

func BenchmarkDecodeAllocsAnswer(b *testing.B) {
	benchDecode[allocsAnswer](b, encodeResponse(b, 1, "Alloc.GetAllocs", testAllocsAnswer()))
}
