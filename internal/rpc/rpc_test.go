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

// Echo answers calls; a call with Hold set waits until held is closed,
// as a blocking query holds its call.
type Echo struct{ held chan struct{} }

type EchoArgs struct {
	Msg  string
	Hold bool
	Fail int
}

type EchoReply struct{ Msg string }

func (e Echo) Say(args *EchoArgs, reply *EchoReply) error {
	if args.Fail != 0 {
		return structs.NewErrCoded(args.Fail, "failed: %s", args.Msg)
	}
	if args.Hold {
		<-e.held
	}
	reply.Msg = "echo " + args.Msg
	return nil
}

func startServer(t *testing.T) (*Listener, *RaftLayer) {
	l, rl, _ := startHoldingServer(t)
	return l, rl
}

// startHoldingServer also returns the channel that releases held calls.
func startHoldingServer(t *testing.T) (*Listener, *RaftLayer, chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.NewServer()
	held := make(chan struct{})
	if err := srv.RegisterName("Echo", Echo{held: held}); err != nil {
		t.Fatal(err)
	}
	rl := NewRaftLayer(ln.Addr())
	l := NewListener(ln, srv, rl, nil)
	go l.Serve()
	t.Cleanup(func() { l.Close() })
	return l, rl, held
}

func TestPoolConcurrentCallsShareOneSession(t *testing.T) {
	l, _, held := startHoldingServer(t)
	p := NewPool(time.Second)
	defer p.Shutdown()

	// A call held by the server must not hold up others on the session:
	// they all complete while it is still held.
	slow := make(chan error, 1)
	go func() {
		var r EchoReply
		slow <- p.Call(l.Addr().String(), "Echo.Say", &EchoArgs{Msg: "slow", Hold: true}, &r)
	}()
	var wg sync.WaitGroup
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
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		close(held)
		t.Fatal("calls waited behind the held one")
	}
	select {
	case err := <-slow:
		t.Fatalf("the held call returned before it was released: %v", err)
	default:
	}
	p.mu.Lock()
	sessions := len(p.conns)
	p.mu.Unlock()
	if sessions != 1 {
		t.Errorf("%d sessions, want one", sessions)
	}
	close(held)
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

// Pull answers its table as the state store's allocations, which only the
// encoder reads (structs.NodeClientAllocsResponse.SetAllocsOf).
type Pull struct{}

func (Pull) Get(args *EchoArgs, reply *structs.NodeClientAllocsResponse) error {
	reply.SetAllocsOf([]*structs.Allocation{{ID: "a1", AllocModifyIndex: 7}})
	reply.Index = 7
	return nil
}

// An in-process caller gets the answer as a remote one decodes it: the
// table as a map (InmemReplier).
func TestInmemCallPreparesReply(t *testing.T) {
	srv := rpc.NewServer()
	srv.RegisterName("Pull", Pull{})
	var r structs.NodeClientAllocsResponse
	if err := InmemCall(srv, "Pull.Get", &EchoArgs{}, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Allocs) != 1 || r.Allocs["a1"] != 7 || r.Index != 7 {
		t.Fatalf("in-process answer %+v", r)
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
		in.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := in.Read(buf); err != nil || string(buf) != "ping" {
			t.Fatalf("read %q %v", buf, err)
		}
		in.Close()
	case <-time.After(10 * time.Second):
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
