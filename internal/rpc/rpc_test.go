package rpc

import (
	"net"
	"net/rpc"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover-project/drover/internal/structs"
)

type Echo struct{}

type EchoArgs struct {
	Msg   string
	Delay time.Duration
	Fail  int
}

type EchoReply struct{ Msg string }

func (Echo) Say(args *EchoArgs, reply *EchoReply) error {
	if args.Fail != 0 {
		return structs.NewErrCoded(args.Fail, "failed: %s", args.Msg)
	}
	time.Sleep(args.Delay) // simulates a blocking query holding the call
	reply.Msg = "echo " + args.Msg
	return nil
}

func startServer(t *testing.T) (*Listener, *RaftLayer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.NewServer()
	if err := srv.RegisterName("Echo", Echo{}); err != nil {
		t.Fatal(err)
	}
	rl := NewRaftLayer(ln.Addr())
	l := NewListener(ln, srv, rl, nil)
	go l.Serve()
	t.Cleanup(func() { l.Close() })
	return l, rl
}

func TestPoolConcurrentCallsShareOneSession(t *testing.T) {
	l, _ := startServer(t)
	p := NewPool(time.Second)
	defer p.Shutdown()

	// A slow call must not hold up fast ones on the same session.
	slow := make(chan error, 1)
	go func() {
		var r EchoReply
		slow <- p.Call(l.Addr().String(), "Echo.Say", &EchoArgs{Msg: "slow", Delay: 500 * time.Millisecond}, &r)
	}()
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r EchoReply
			if err := p.Call(l.Addr().String(), "Echo.Say", &EchoArgs{Msg: "hi"}, &r); err != nil || r.Msg != "echo hi" {
				t.Errorf("call: %v %q", err, r.Msg)
			}
		}()
	}
	wg.Wait()
	if time.Since(start) > 400*time.Millisecond {
		t.Errorf("fast calls waited behind the slow one: %v", time.Since(start))
	}
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
}

func TestCodedErrorCrossesTheWire(t *testing.T) {
	l, _ := startServer(t)
	p := NewPool(time.Second)
	defer p.Shutdown()
	var r EchoReply
	err := p.Call(l.Addr().String(), "Echo.Say", &EchoArgs{Msg: "x", Fail: 404}, &r)
	code, msg := structs.ErrorCode(err)
	if code != 404 || msg != "failed: x" {
		t.Fatalf("got %d %q from %v", code, msg, err)
	}
	if !IsServerError(err) {
		t.Fatalf("endpoint error classified as transport error")
	}
}

func TestInmemCall(t *testing.T) {
	srv := rpc.NewServer()
	srv.RegisterName("Echo", Echo{})
	var r EchoReply
	if err := InmemCall(srv, "Echo.Say", &EchoArgs{Msg: "local"}, &r); err != nil || r.Msg != "echo local" {
		t.Fatalf("%v %q", err, r.Msg)
	}
	err := InmemCall(srv, "Echo.Say", &EchoArgs{Fail: 400, Msg: "bad"}, &r)
	if code, _ := structs.ErrorCode(err); code != 400 {
		t.Fatalf("want 400, got %v", err)
	}
	if err := InmemCall(srv, "Echo.Nope", &EchoArgs{}, &r); err == nil {
		t.Fatal("unknown method succeeded")
	}
}

func TestRaftConnectionsAreHandedToTheLayer(t *testing.T) {
	l, rl := startServer(t)
	got := make(chan net.Conn, 1)
	go func() {
		c, err := rl.Accept()
		if err == nil {
			got <- c
		}
	}()
	c, err := rl.Dial(raft.ServerAddress("127.0.0.1:"+portOf(l.Addr())), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("ping"))
	select {
	case in := <-got:
		buf := make([]byte, 4)
		in.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := in.Read(buf); err != nil || string(buf) != "ping" {
			t.Fatalf("read %q %v", buf, err)
		}
		in.Close()
	case <-time.After(2 * time.Second):
		t.Fatal("raft connection never arrived")
	}
}

func TestClosedPortIsATransportError(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	p := NewPool(time.Second)
	var r EchoReply
	if err := p.Call(addr, "Echo.Say", &EchoArgs{}, &r); err == nil || IsServerError(err) {
		t.Fatalf("want transport error, got %v", err)
	}
}

func portOf(a net.Addr) string {
	_, p, _ := net.SplitHostPort(a.String())
	return p
}
