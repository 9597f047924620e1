package server

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/events"
	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/structs"
)

// The event stream of another region (/v1/event/stream?region=, polled
// with Event.Poll) is that region's, asked of one of its servers; a region
// nobody gossips for is "No path to region" (it was this region's stream).
func TestEventPollOtherRegion(t *testing.T) {
	east := gossipServerIn(t, "e1", t.TempDir(), 1, "east")
	west := gossipServerIn(t, "w1", t.TempDir(), 1, "west")
	waitFor(t, 10*time.Second, "both leaders", func() bool { return east.IsLeader() && west.IsLeader() })
	if _, err := west.Join([]string{serfAddr(east)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "west known to east", func() bool { return len(east.regionServers()["west"]) > 0 })
	job := testJob("only-in-west", 1)
	job.Region = "west"
	if err := west.RPC("Job.Register", &structs.JobRegisterRequest{Job: job,
		WriteRequest: structs.WriteRequest{Region: "west", Namespace: "default"}}, &structs.JobRegisterResponse{}); err != nil {
		t.Fatal(err)
	}
	poll := func(region string) (string, error) {
		req := events.Request{Index: 1, Topics: map[string][]string{events.TopicJob: {"*"}}, Namespace: "default", Region: region}
		var reply events.PollResponse
		err := east.RPC("Event.Poll", &events.PollRequest{Req: req, Wait: 200 * time.Millisecond}, &reply)
		var b strings.Builder
		for _, f := range reply.Frames {
			b.Write(f)
		}
		return b.String(), err
	}
	if got, err := poll("west"); err != nil || !strings.Contains(got, "only-in-west") {
		t.Fatalf("west's stream through east: %q, %v; want west's job event", got, err)
	}
	if got, err := poll(""); err != nil || strings.Contains(got, "only-in-west") {
		t.Fatalf("east's own stream: %q, %v; want no west job", got, err)
	}
	if _, err := poll("nope"); errCode(err) != 400 || !strings.Contains(err.Error(), `No path to region "nope"`) {
		t.Fatalf("an unknown region's stream: %v, want 400 No path to region", err)
	}
}

// A server of another region that went away (not yet noticed by the
// gossip pool) is skipped: requests for its region go to another of its
// servers; once none can be reached, the answer is "No path to region"
// naming why, not a 500 transport error.
func TestForwardRegionServerGone(t *testing.T) {
	east := gossipServerIn(t, "e1", t.TempDir(), 1, "east")
	w1 := gossipServerIn(t, "w1", t.TempDir(), 2, "west")
	w2 := gossipServerIn(t, "w2", t.TempDir(), 2, "west")
	if _, err := w2.Join([]string{serfAddr(w1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w1.Join([]string{serfAddr(east)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "west's leader and both west servers known to east", func() bool {
		return (w1.IsLeader() || w2.IsLeader()) && len(east.regionServers()["west"]) == 2
	})
	follower := w1
	if w1.IsLeader() {
		follower = w2
	}
	// The follower goes away without leaving the pool (as when killed).
	follower.Shutdown()
	list := func() error {
		return east.RPC("Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{Region: "west", Namespace: "default", AllowStale: true}}, &structs.JobListResponse{})
	}
	for i := 0; i < 20 && len(east.regionServers()["west"]) == 2; i++ {
		if err := list(); err != nil {
			t.Fatalf("request %d for west with one of its servers gone: %v", i, err)
		}
	}
	leader := w1
	if follower == w1 {
		leader = w2
	}
	// Both gone: whether or not the pool noticed yet, the same answer.
	leader.Shutdown()
	err := list()
	if errCode(err) != 400 || !strings.Contains(err.Error(), `No path to region "west"`) {
		t.Fatalf("a request for west with all its servers gone: %v, want 400 No path to region", err)
	}
}

// A server of another region that takes a forwarded call and hangs (a
// SIGSTOPed process) holds the caller no longer than the forwarding
// deadline (plus a blocking query's own wait), and the error names that
// region's server (it said "the leader", which it is not).
func TestForwardRegionStalledServer(t *testing.T) {
	const fwd = 500 * time.Millisecond
	east := gossipServerIn(t, "e1", t.TempDir(), 1, "east", func(c *Config) { c.RPCForwardTimeout = fwd })
	var stall *stallListener
	west := gossipServerIn(t, "w1", t.TempDir(), 1, "west", func(c *Config) {
		stall = &stallListener{Listener: c.RPCListener}
		c.RPCListener = stall
	})
	waitFor(t, 10*time.Second, "both leaders", func() bool { return east.IsLeader() && west.IsLeader() })
	if _, err := west.Join([]string{serfAddr(east)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "west known to east", func() bool { return len(east.regionServers()["west"]) > 0 })
	list := func(q structs.QueryOptions) (error, time.Duration) {
		q.Region, q.Namespace = "west", "default"
		start := time.Now()
		err := east.RPC("Job.List", &structs.JobListRequest{QueryOptions: q}, &structs.JobListResponse{})
		return err, time.Since(start)
	}
	if err, _ := list(structs.QueryOptions{}); err != nil {
		t.Fatal(err)
	}
	stall.stall(true)
	defer stall.stall(false)
	const wait = 300 * time.Millisecond
	for _, q := range []structs.QueryOptions{{}, {MinQueryIndex: 1 << 40, MaxQueryTime: wait}} {
		err, took := list(q)
		if err == nil || !strings.Contains(err.Error(), `region "west"'s server`) || !strings.Contains(err.Error(), "did not answer Job.List") {
			t.Fatalf("a read from west's stalled server: %v; want the deadline naming west's server", err)
		}
		if max := fwd + q.MaxQueryTime*2 + 10*time.Second; took > max {
			t.Fatalf("a read from west's stalled server answered after %s, over %s", took, max)
		}
	}
	job := testJob("to-stalled-west", 0)
	job.Region = "west"
	err := east.RPC("Job.Register", &structs.JobRegisterRequest{Job: job, WriteRequest: structs.WriteRequest{Region: "west", Namespace: "default"}}, &structs.JobRegisterResponse{})
	if err == nil || !structs.IsOutcomeUnknown(err) || !strings.Contains(err.Error(), `region "west"'s server`) {
		t.Fatalf("a write to west's stalled server: %v; want its outcome unknown, naming west's server", err)
	}
}

// cutListener hands out connections that, once cut, close as soon as a
// multiplexed RPC session's bytes arrive: the server took the request and
// died before it answered (a crash, a kill), before the caller's session
// noticed the connection was gone.
type cutListener struct {
	net.Listener
	cut     atomic.Bool
	cutOnce atomic.Bool // cut only the next connection that receives a session's bytes
}

func (l *cutListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &cutConn{Conn: c, l: l}, nil
}

type cutConn struct {
	net.Conn
	l          *cutListener
	first, mux bool
}

func (c *cutConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.first && n > 0 {
		c.first, c.mux = true, p[0] == droverrpc.ProtoMultiplex
		return n, err
	}
	if c.mux && n > 0 && (c.l.cut.Load() || c.l.cutOnce.CompareAndSwap(true, false)) {
		c.Conn.Close()
		return 0, net.ErrClosed
	}
	return n, err
}

// A read for another region whose server took it and then went away (the
// session had not noticed yet) is sent to the region's next server, and
// with none left the answer is "No path to region", as for a server that
// could not be reached at all: it was the transport's "unexpected EOF",
// a 500 (CI saw it in TestForwardRegionServerGone, when the pooled
// session to the just-stopped leader was still open).
func TestForwardRegionReadServerDiesAfterRequest(t *testing.T) {
	east := gossipServerIn(t, "e1", t.TempDir(), 1, "east")
	var cut *cutListener
	west := gossipServerIn(t, "w1", t.TempDir(), 1, "west", func(c *Config) {
		cut = &cutListener{Listener: c.RPCListener}
		c.RPCListener = cut
	})
	waitFor(t, 10*time.Second, "both leaders", func() bool { return east.IsLeader() && west.IsLeader() })
	if _, err := west.Join([]string{serfAddr(east)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "west known to east", func() bool { return len(east.regionServers()["west"]) > 0 })
	list := func() error {
		return east.RPC("Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{Region: "west", Namespace: "default"}}, &structs.JobListResponse{})
	}
	if err := list(); err != nil { // east's session to west is up
		t.Fatal(err)
	}
	cut.cut.Store(true)
	err := list()
	if errCode(err) != 400 || !strings.Contains(err.Error(), `No path to region "west"`) {
		t.Fatalf("a read for west whose only server died after taking it: %v, want 400 No path to region", err)
	}
}
