package rpc

import (
	"context"
	"errors"
	"net"
	"net/rpc"
	"testing"
	"time"
)

// WaitArgs carries the context the server's codec gives it.
type WaitArgs struct {
	Msg string
	ctx context.Context
}

func (a *WaitArgs) WithContext(ctx context.Context) { a.ctx = ctx }

// Waiter blocks each call until its stream's context ends and reports it.
type Waiter struct{ ended chan string }

func (w Waiter) Block(args *WaitArgs, reply *EchoReply) error {
	if args.ctx == nil {
		return errors.New("no stream context")
	}
	<-args.ctx.Done()
	w.ended <- args.Msg
	return nil
}

// A call with a context runs on its own stream: when its deadline passes
// the caller gets ErrCallTimeout and the server's handler sees its stream
// context end (a blocking query the caller gave up on ends there too);
// calls that answer leave their stream for the next call.
func TestCallContextDeadlineEndsTheCallOnTheServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.NewServer()
	ended := make(chan string, 4)
	if err := srv.RegisterName("Waiter", Waiter{ended: ended}); err != nil {
		t.Fatal(err)
	}
	if err := srv.RegisterName("Echo", Echo{held: make(chan struct{})}); err != nil {
		t.Fatal(err)
	}
	l := NewListener(ln, srv, NewRaftLayer(ln.Addr()), nil)
	go l.Serve()
	t.Cleanup(func() { l.Close() })
	p := NewPool(time.Second)
	t.Cleanup(p.Shutdown)
	addr := ln.Addr().String()

	// Long enough that the deadline passes while the call waits on the
	// server, not already before it is sent (a loaded race run can pause
	// the test that long), which answers the context's own error.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	var reply EchoReply
	err = p.CallContext(ctx, addr, "Waiter.Block", &WaitArgs{Msg: "given up"}, &reply)
	if !errors.Is(err, ErrCallTimeout) || time.Since(start) > 5*time.Second {
		t.Fatalf("call past its deadline: %v after %s, want ErrCallTimeout", err, time.Since(start))
	}
	select {
	case msg := <-ended:
		if msg != "given up" {
			t.Fatalf("ended %q", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server's handler still waits after the caller gave up")
	}

	// Answered calls reuse one stream.
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := p.CallContext(ctx, addr, "Echo.Say", &EchoArgs{Msg: "hi"}, &reply)
		cancel()
		if err != nil || reply.Msg != "echo hi" {
			t.Fatalf("call %d: %q, %v", i, reply.Msg, err)
		}
	}
	p.mu.Lock()
	idle := len(p.conns[addr].idle)
	p.mu.Unlock()
	if idle != 1 {
		t.Fatalf("%d idle streams after three calls in turn, want 1", idle)
	}
}
