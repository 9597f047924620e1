package rpc

import (
	"io"
	"net/rpc"
	"sync/atomic"
	"testing"
	"time"
)

// A pool built with NewPoolCodec reads and writes its streams with the
// caller's codec.
func TestNewPoolCodecUsesCallersCodec(t *testing.T) {
	l, _ := startServer(t)
	var made atomic.Int32
	p := NewPoolCodec(time.Second, func(stream io.ReadWriteCloser) rpc.ClientCodec {
		made.Add(1)
		return NewClientCodec(bufferedConn(stream))
	})
	defer p.Shutdown()
	for i := 0; i < 3; i++ {
		var r EchoReply
		if err := p.Call(l.Addr().String(), "Echo.Say", &EchoArgs{Msg: "hi"}, &r); err != nil || r.Msg != "echo hi" {
			t.Fatalf("call: %q, %v", r.Msg, err)
		}
	}
	if made.Load() != 1 {
		t.Fatalf("codecs made: %d, want 1 (one per session)", made.Load())
	}
}
