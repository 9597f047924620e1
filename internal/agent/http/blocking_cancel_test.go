package httpapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/raft"

	drover "github.com/drover-project/drover/internal/server"
)

// threeServers starts an in-process cluster of three servers on loopback
// and returns it with its leader.
func threeServers(t *testing.T) (all []*drover.Server, leader *drover.Server) {
	t.Helper()
	var lns []net.Listener
	var peers []raft.Server
	for i := 0; i < 3; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		peers = append(peers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(uuid.NewString()), Address: raft.ServerAddress(ln.Addr().String())})
	}
	for i := range lns {
		rc := raft.DefaultConfig()
		rc.HeartbeatTimeout, rc.ElectionTimeout = 100*time.Millisecond, 100*time.Millisecond
		rc.LeaderLeaseTimeout, rc.CommitTimeout = 50*time.Millisecond, 5*time.Millisecond
		cfg := drover.DefaultConfig()
		cfg.NodeID, cfg.NodeName = string(peers[i].ID), fmt.Sprintf("s%d", i)
		cfg.DevMode, cfg.RPCListener, cfg.Peers, cfg.RaftConfig, cfg.NumSchedulers = true, lns[i], peers, rc, 1
		s, err := drover.NewServer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, s)
		t.Cleanup(func() { s.Shutdown() })
	}
	deadline := time.Now().Add(20 * time.Second)
	for leader == nil {
		for _, s := range all {
			if s.IsLeader() {
				leader = s
			}
		}
		if leader == nil && time.Now().After(deadline) {
			t.Fatal("no leader elected")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return all, leader
}

// Clients that give up on blocking queries (?index= far ahead, ?wait=5m)
// leave nothing waiting behind them: the query ends on the server that
// serves it in process (the leader) and on the leader a follower forwarded
// it to, so no goroutine is left in the query's path (the HTTP handler, the
// follower's forward, the leader's blocking query). Before, each abandoned
// query held its goroutines until the wait ran out.
//
// The process's whole goroutine count is no measure of that: seconds after
// its election the leader starts probing the followers (autopilot), and
// the connections and streams its pool keeps for that added 8 to 18
// goroutines after the baseline was taken, failing the test.
func TestBlockingQueriesEndWhenClientGoes(t *testing.T) {
	servers, leader := threeServers(t)
	var follower *drover.Server
	for _, s := range servers {
		if s != leader {
			follower = s
			break
		}
	}
	for _, tc := range []struct {
		name string
		srv  *drover.Server
	}{{"in process on the leader", leader}, {"forwarded by a follower", follower}} {
		t.Run(tc.name, func(t *testing.T) {
			rpc := &countingRPC{inner: tc.srv}
			ts := httptest.NewServer(NewHandler(Config{RPC: rpc, Agent: &fakeAgent{serverOK: true}}))
			defer func() {
				if t.Failed() {
					// Queries still parked would hold ts.Close for
					// their whole wait: end them first.
					for _, s := range servers {
						s.Shutdown()
					}
				}
				ts.Close()
			}()
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			// One answered query first: connections and pools are set up.
			resp, err := client.Get(ts.URL + "/v1/jobs?index=1&wait=10ms")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("warm-up query: %v %v", resp, err)
			}
			resp.Body.Close()
			// Its handler may still be returning after its answer was read.
			waitUntil(t, 10*time.Second, "the warm-up query to end", func() bool { return inQueryPath() == 0 })

			const n = 40
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, n)
			for i := 0; i < n; i++ {
				go func() {
					req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/jobs?index=1000000&wait=5m", nil)
					resp, err := client.Do(req)
					if err == nil {
						resp.Body.Close()
						err = fmt.Errorf("answered %d before the client gave up", resp.StatusCode)
					}
					done <- err
				}()
			}
			waitUntil(t, 10*time.Second, "the queries to park", func() bool { return rpc.inFlight.Load() == n })
			// The measure sees the parked queries (else it proves nothing).
			if parked := inQueryPath(); parked < n {
				t.Fatalf("%d goroutines in the query path for %d parked queries", parked, n)
			}
			cancel()
			for i := 0; i < n; i++ {
				if err := <-done; err == nil || ctx.Err() == nil {
					t.Fatalf("query %d: %v", i, err)
				}
			}
			waitUntil(t, 10*time.Second, "the queries to end", func() bool { return rpc.inFlight.Load() == 0 })
			waitUntil(t, 10*time.Second, "no goroutine left in the query path", func() bool { return inQueryPath() == 0 })
			// The servers still answer blocking queries that are not given up.
			resp, err = client.Get(ts.URL + "/v1/jobs?index=1&wait=10ms")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("query after the abandoned ones: %v %v", resp, err)
			}
			resp.Body.Close()
		})
	}
}

// countingRPC counts the calls in progress.
type countingRPC struct {
	inner    RPCer
	inFlight atomic.Int64
}

func (c *countingRPC) RPC(method string, args, reply any) error {
	c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	return c.inner.RPC(method, args, reply)
}

// queryFrames name the functions a job list query's goroutines run in: the
// HTTP API's handlers, and the servers' Job.List endpoint, where the
// follower forwards it and the leader blocks (the servers' own long polls,
// their workers' Eval.Dequeue, go through forward and blockingRPC too).
var queryFrames = []string{
	"/internal/agent/http.(*server).",
	"/internal/server.(*Job).List(",
}

// inQueryPath counts the goroutines in a query's path now.
func inQueryPath() int {
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		panic(err)
	}
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		for _, f := range queryFrames {
			if strings.Contains(g, f) {
				n++
				break
			}
		}
	}
	return n
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s (goroutines now %d)", d, what, runtime.NumGoroutine())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
