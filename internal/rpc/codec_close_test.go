package rpc

import (
	"errors"
	"io"
	"net"
	"net/rpc"
	"runtime"
	"testing"
	"time"
)

// Every read after a codec's connection was closed fails: net/rpc's
// reading loops end instead of spinning on nil errors.
func TestCodecReadsFailAfterClose(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	cc := NewClientCodec(a)
	if err := cc.Close(); err != nil {
		t.Fatal(err)
	}
	var resp rpc.Response
	if err := cc.ReadResponseHeader(&resp); !errors.Is(err, io.EOF) {
		t.Fatalf("response header after Close: %v", err)
	}
	if err := cc.ReadResponseBody(nil); !errors.Is(err, io.EOF) {
		t.Fatalf("response body after Close: %v", err)
	}

	c, d := net.Pipe()
	defer d.Close()
	sc := NewServerCodec(c)
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	var req rpc.Request
	if err := sc.ReadRequestHeader(&req); !errors.Is(err, io.EOF) {
		t.Fatalf("request header after Close: %v", err)
	}
	if err := sc.ReadRequestBody(nil); !errors.Is(err, io.EOF) {
		t.Fatalf("request body after Close: %v", err)
	}
}

// A call pending on a server that never answers returns when the client
// is closed, and the client's reader goroutine ends (a server shutting
// down waits for its forwarding calls).
func TestPendingCallReturnsOnClose(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	go io.Copy(io.Discard, b) // the "server" reads requests, never answers
	before := runtime.NumGoroutine()
	client := rpc.NewClientWithCodec(NewClientCodec(a))
	done := make(chan error, 1)
	go func() {
		var reply EchoReply
		done <- client.Call("Echo.Say", &EchoArgs{Msg: "hi"}, &reply)
	}()
	time.Sleep(20 * time.Millisecond) // the call is written and pending
	client.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("pending call answered without a server")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pending call did not return after Close")
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines: %d, %d before the client", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}
