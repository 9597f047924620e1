package server

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/structs"
)

// stallListener hands out connections that, while stalled, hold every byte
// received on a multiplexed RPC session (Raft's connections go on): the
// server has accepted the connection and then does not answer, as a leader
// stuck in a long GC pause, a full disk or a SIGSTOP would.
type stallListener struct {
	net.Listener
	mu   sync.Mutex
	gate chan struct{} // nil: not stalled; closed when the stall ends
}

func (l *stallListener) stall(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case on && l.gate == nil:
		l.gate = make(chan struct{})
	case !on && l.gate != nil:
		close(l.gate)
		l.gate = nil
	}
}

func (l *stallListener) currentGate() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gate
}

func (l *stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: c, l: l, done: make(chan struct{})}, nil
}

type stallConn struct {
	net.Conn
	l         *stallListener
	first     bool
	mux       bool
	closeOnce sync.Once
	done      chan struct{}
}

func (c *stallConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.first && n > 0 {
		c.first, c.mux = true, p[0] == droverrpc.ProtoMultiplex
		return n, err
	}
	if c.mux {
		if g := c.l.currentGate(); g != nil {
			select {
			case <-g:
			case <-c.done:
				return 0, net.ErrClosed
			}
		}
	}
	return n, err
}

func (c *stallConn) Close() error {
	c.closeOnce.Do(func() { close(c.done) })
	return c.Conn.Close()
}

// A leader that took a forwarded call and then hangs no longer blocks the
// follower's caller for ever: a write gives up after RPCForwardTimeout and
// says its outcome is unknown (the leader may still apply it), a blocking
// read after its own wait plus that timeout. A blocking query that waits
// longer than RPCForwardTimeout on a healthy leader is not cut short.
func TestForwardedCallsHaveADeadline(t *testing.T) {
	const fwd = 500 * time.Millisecond
	lns := map[int]*stallListener{}
	servers := testClusterWith(t, 3, func(i int, cfg *Config) {
		l := &stallListener{Listener: cfg.RPCListener}
		lns[i] = l
		cfg.RPCListener = l
		cfg.RPCForwardTimeout = fwd
	})
	leader := waitLeader(t, servers, 20*time.Second, "a leader")
	var fol *Server
	var stall *stallListener
	for i, s := range servers {
		if s == leader {
			stall = lns[i]
		} else if fol == nil {
			fol = s
		}
	}
	register(t, fol, testJob("before-stall", 0)) // the follower's session to the leader is up

	call := func(method string, args, reply any) (error, time.Duration) {
		t.Helper()
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- fol.RPC(method, args, reply) }()
		select {
		case err := <-done:
			return err, time.Since(start)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s through a follower to a stalled leader still waiting after 20 s", method)
			return nil, 0
		}
	}

	stall.stall(true)
	var rr structs.JobRegisterResponse
	err, took := call("Job.Register", &structs.JobRegisterRequest{Job: testJob("during-stall", 0)}, &rr)
	if err == nil || !structs.IsOutcomeUnknown(err) || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("write to a stalled leader: %v; want an error saying its outcome is unknown", err)
	}
	if took < fwd || took > fwd+10*time.Second {
		t.Fatalf("write to a stalled leader answered after %s; RPCForwardTimeout is %s", took, fwd)
	}
	const wait = 300 * time.Millisecond
	var lr structs.JobListResponse
	blocking := structs.QueryOptions{MinQueryIndex: 1 << 40, MaxQueryTime: wait}
	err, took = call("Job.List", &structs.JobListRequest{QueryOptions: blocking}, &lr)
	if err == nil || structs.IsOutcomeUnknown(err) || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("blocking read from a stalled leader: %v; want a plain timeout", err)
	}
	if took < fwd+wait || took > fwd+wait+10*time.Second {
		t.Fatalf("blocking read from a stalled leader answered after %s; want its wait %s plus %s", took, wait, fwd)
	}

	// The leader answers again: a blocking query waiting three times the
	// forwarding timeout is answered, not cut short.
	stall.stall(false)
	long := structs.QueryOptions{MinQueryIndex: 1 << 40, MaxQueryTime: 3 * fwd}
	err, took = call("Job.List", &structs.JobListRequest{QueryOptions: long}, &lr)
	if err != nil || took < 3*fwd {
		t.Fatalf("blocking read of %s from a healthy leader: %v after %s", 3*fwd, err, took)
	}
	register(t, fol, testJob("after-stall", 0))
}
