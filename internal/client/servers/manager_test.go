package servers

import (
	"context"
	"errors"
	"fmt"
	"net/rpc"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// fakeCluster answers calls per address: down addresses fail as a transport
// would, the others answer with their own name.
type fakeCluster struct {
	mu    sync.Mutex
	down  map[string]bool
	fail  map[string]error // an endpoint's error for that address
	calls []string
}

func (f *fakeCluster) call(addr, method string, args, reply any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, addr)
	if f.down[addr] {
		return fmt.Errorf("rpc: connecting to %s: connection refused", addr)
	}
	if err := f.fail[addr]; err != nil {
		return err
	}
	*reply.(*string) = addr
	return nil
}

// isNotSent: the fake's down servers refuse the connection.
func isNotSent(err error) bool { return strings.Contains(err.Error(), "connecting to") }

func isServerError(err error) bool {
	var se rpc.ServerError
	return errors.As(err, &se)
}

func newTest(f *fakeCluster, addrs ...string) *Manager {
	return New(Config{Servers: addrs, Call: f.call, IsServerError: isServerError, IsNotSent: isNotSent,
		Hold: time.Second, BackoffMin: time.Millisecond, BackoffMax: 10 * time.Millisecond})
}

var three = []string{"a:4647", "b:4647", "c:4647"}

// Clients spread over the servers: each starts with a random one.
func TestManager_ShuffledPerClient(t *testing.T) {
	firsts := map[string]int{}
	for i := 0; i < 300; i++ {
		firsts[newTest(&fakeCluster{}, three...).Current()]++
	}
	for _, s := range three {
		if firsts[s] < 50 {
			t.Fatalf("300 clients start with %v: not balanced", firsts)
		}
	}
}

// Clients that all start with one configured address spread over the
// servers they learn.
func TestManager_LearnedServersSpreadClients(t *testing.T) {
	on := map[string]int{}
	for i := 0; i < 300; i++ {
		m := newTest(&fakeCluster{}, "a:4647")
		m.SetServers(three)
		on[m.Current()]++
	}
	for _, s := range three {
		if on[s] < 50 {
			t.Fatalf("300 clients after learning three servers: %v", on)
		}
	}
}

// A client keeps its server while it answers, and moves to another when it
// fails, without waiting.
func TestManager_StickyThenRotatesOnFailure(t *testing.T) {
	f := &fakeCluster{down: map[string]bool{}}
	m := newTest(f, three...)
	first := m.Current()
	for i := 0; i < 5; i++ {
		var got string
		if err := m.Call("Status.Ping", nil, &got); err != nil || got != first {
			t.Fatalf("call %d: %q, %v (current %s)", i, got, err, first)
		}
	}
	f.mu.Lock()
	f.down[first] = true
	f.mu.Unlock()
	var got string
	if err := m.Call("Status.Ping", nil, &got); err != nil || got == first {
		t.Fatalf("with %s down: %q, %v", first, got, err)
	}
	if m.Current() != got || m.Servers()[len(three)-1] != first {
		t.Fatalf("after failover: current %s, list %v", m.Current(), m.Servers())
	}
}

// While no server answers, a call tries every server, backs off and tries
// again; it succeeds as soon as one comes back within the hold time.
func TestManager_RetriesAllServersUntilOneAnswers(t *testing.T) {
	f := &fakeCluster{down: map[string]bool{"a:4647": true, "b:4647": true, "c:4647": true}}
	m := newTest(f, three...)
	go func() {
		for {
			f.mu.Lock()
			n := len(f.calls)
			if n >= 9 { // three full rounds failed
				f.down["b:4647"] = false
				f.mu.Unlock()
				return
			}
			f.mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}()
	var got string
	if err := m.Call("Status.Ping", nil, &got); err != nil || got != "b:4647" {
		t.Fatalf("got %q, %v", got, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range three {
		if !slices.Contains(f.calls, s) {
			t.Fatalf("%s never tried: %v", s, f.calls)
		}
	}
}

// With every server down a call returns the transport error after the hold
// time: it never hangs.
func TestManager_GivesUpAfterHold(t *testing.T) {
	f := &fakeCluster{down: map[string]bool{"a:4647": true, "b:4647": true}}
	m := New(Config{Servers: []string{"a:4647", "b:4647"}, Call: f.call, IsServerError: isServerError, IsNotSent: isNotSent,
		Hold: 200 * time.Millisecond, BackoffMin: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	start := time.Now()
	var got string
	err := m.Call("Status.Ping", nil, &got)
	if err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) < 4 {
		t.Fatalf("only %d attempts in the hold time", len(f.calls))
	}
}

// An endpoint's own error is the answer: it is returned at once and the
// server stays current. "No cluster leader" is asked of the other servers
// once (that server may be the one cut off), never waited on again.
func TestManager_EndpointErrors(t *testing.T) {
	f := &fakeCluster{fail: map[string]error{}}
	m := newTest(f, three...)
	cur := m.Current()
	f.fail[cur] = rpc.ServerError("job not found")
	var got string
	if err := m.Call("Job.GetJob", nil, &got); err == nil || err.Error() != "job not found" {
		t.Fatalf("endpoint error: %v", err)
	}
	if m.Current() != cur || len(f.calls) != 1 {
		t.Fatalf("endpoint error moved the client: current %s, calls %v", m.Current(), f.calls)
	}
	f.fail[cur] = rpc.ServerError(structs.ErrNoLeader.Error())
	if err := m.Call("Job.GetJob", nil, &got); err != nil || got == cur {
		t.Fatalf("no leader on %s: %q, %v", cur, got, err)
	}
	for _, s := range three {
		f.fail[s] = rpc.ServerError(structs.ErrNoLeader.Error())
	}
	f.calls = nil
	if err := m.Call("Job.GetJob", nil, &got); err == nil || len(f.calls) != 3 {
		t.Fatalf("no leader anywhere: %v after %v", err, f.calls)
	}
}

// SetServers: the same set keeps the order (and the current server); a
// new set is taken, deduplicated; an empty list is ignored; an empty
// manager answers a clear error.
func TestManager_SetServers(t *testing.T) {
	m := newTest(&fakeCluster{}, "a:4647")
	m.SetServers([]string{"c:4647", "b:4647", "a:4647", "a:4647", " "})
	got := m.Servers()
	if len(got) != 3 {
		t.Fatalf("after SetServers: %v", got)
	}
	for i := 0; i < 20; i++ {
		m.SetServers([]string{"a:4647", "b:4647", "c:4647"})
		if !slices.Equal(m.Servers(), got) {
			t.Fatalf("the same set reordered the list: %v, was %v", m.Servers(), got)
		}
	}
	m.SetServers(nil)
	if len(m.Servers()) != 3 {
		t.Fatalf("an empty list emptied the manager: %v", m.Servers())
	}
	m.SetServers([]string{"d:4647"})
	if got := m.Servers(); !slices.Equal(got, []string{"d:4647"}) {
		t.Fatalf("replacement: %v", got)
	}
	var answer string
	if err := newTest(&fakeCluster{}).Call("Status.Ping", nil, &answer); err == nil || !errors.Is(err, ErrNoServers) {
		t.Fatalf("no servers: %v", err)
	}
}

// Stop ends a call waiting between rounds.
func TestManager_StopEndsRetries(t *testing.T) {
	f := &fakeCluster{down: map[string]bool{"a:4647": true}}
	m := New(Config{Servers: []string{"a:4647"}, Call: f.call, IsServerError: isServerError, IsNotSent: isNotSent,
		Hold: time.Hour, BackoffMin: 50 * time.Millisecond, BackoffMax: 100 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		var got string
		done <- m.Call("Status.Ping", nil, &got)
	}()
	m.Stop()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a stopped call succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not end the retrying call")
	}
}

// A call that was sent and got no answer (the connection broke after the
// request went out) may have been applied: a write is answered with an
// error saying its outcome is unknown instead of going to the next server,
// which could apply it twice; a read goes on to the next server. A
// connection that could not be made proves nothing was sent: the write
// goes on too.
func TestManager_WriteNotResentAfterSend(t *testing.T) {
	f := &fakeCluster{fail: map[string]error{}}
	m := newTest(f, three...)
	cur := m.Current()
	f.fail[cur] = errors.New("unexpected EOF") // sent, then the connection broke
	var got string
	err := m.Call("Job.Register", &structs.JobRegisterRequest{}, &got)
	if err == nil || !structs.IsOutcomeUnknown(err) || len(f.calls) != 1 {
		t.Fatalf("write whose connection broke after sending: %v after calls %v; want outcome unknown after 1 call", err, f.calls)
	}
	f.calls = nil
	cur = m.Current()
	f.fail[cur] = errors.New("unexpected EOF")
	if err := m.Call("Job.GetJob", &structs.JobSpecificRequest{}, &got); err != nil || got == cur || len(f.calls) != 2 {
		t.Fatalf("read whose connection broke: %q, %v after %v; want the next server's answer", got, err, f.calls)
	}
	f.calls = nil
	cur = m.Current()
	f.fail = map[string]error{}
	f.down = map[string]bool{cur: true}
	if err := m.Call("Job.Register", &structs.JobRegisterRequest{}, &got); err != nil || got == cur {
		t.Fatalf("write to a server that refused the connection: %q, %v; want the next server's answer", got, err)
	}
}

// A server that takes a call and never answers is given up on after the
// call's deadline (CallTimeout, plus a blocking query's wait): a write
// answers that its outcome is unknown, a read goes on to the next server,
// a blocking read waits its wait before it is given up on.
func TestManager_StalledServerHasADeadline(t *testing.T) {
	const timeout = 100 * time.Millisecond
	f := &fakeCluster{fail: map[string]error{}}
	var stalled string
	m := New(Config{Servers: three, Call: f.call, IsServerError: isServerError, IsNotSent: isNotSent,
		Hold: time.Second, BackoffMin: time.Millisecond, BackoffMax: 10 * time.Millisecond, CallTimeout: timeout,
		CallContext: func(ctx context.Context, addr, method string, args, reply any) error {
			if addr == stalled {
				<-ctx.Done() // took the call, never answers
				return fmt.Errorf("rpc: the server did not answer in time: %w", ctx.Err())
			}
			return f.call(addr, method, args, reply)
		}})
	stalled = m.Current()
	var got string
	start := time.Now()
	err := m.Call("Job.Register", &structs.JobRegisterRequest{}, &got)
	if err == nil || !structs.IsOutcomeUnknown(err) || time.Since(start) < timeout || time.Since(start) > 5*time.Second {
		t.Fatalf("write to a stalled server: %v after %s; want outcome unknown after %s", err, time.Since(start), timeout)
	}
	stalled = m.Current()
	if err := m.Call("Job.GetJob", &structs.JobSpecificRequest{}, &got); err != nil || got == stalled {
		t.Fatalf("read with a stalled server: %q, %v; want another server's answer", got, err)
	}
	stalled = m.Current()
	const wait = 300 * time.Millisecond
	start = time.Now()
	q := &structs.JobSpecificRequest{QueryOptions: structs.QueryOptions{MinQueryIndex: 10, MaxQueryTime: wait}}
	if err := m.Call("Job.GetJob", q, &got); err != nil || got == stalled || time.Since(start) < wait+timeout {
		t.Fatalf("blocking read with a stalled server: %q, %v after %s; want another server's answer after %s", got, err, time.Since(start), wait+timeout)
	}
}

// In an outage (the servers left cannot elect a leader, the others are
// down), the error a call answers is the reachable server's "No cluster
// leader", whatever the order the servers were tried in: the client's log
// said it could not connect to a dead server, as if it had never tried the
// one that answered.
func TestManager_NoLeaderFromAReachableServerIsTheAnswer(t *testing.T) {
	for i := 0; i < 3; i++ {
		f := &fakeCluster{down: map[string]bool{}, fail: map[string]error{}}
		m := newTest(f, three...)
		// The reachable server is tried first, second, then third.
		order := m.Servers()
		alive := order[i]
		for _, s := range order {
			if s != alive {
				f.down[s] = true
			}
		}
		f.fail[alive] = rpc.ServerError(structs.ErrNoLeader.Error())
		var reply string
		err := m.Call("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{}, &reply)
		if !structs.IsNoLeader(err) {
			t.Fatalf("tried %v, %s alive without a leader: %v, want %q", order, alive, err, structs.ErrNoLeader)
		}
	}
}
