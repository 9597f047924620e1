package server

import (
	"sync/atomic"
	"syscall"
	"testing"

	droverrpc "github.com/drover-project/drover/internal/rpc"
	"github.com/drover-project/drover/internal/structs"
)

// BenchmarkHeartbeatRPC is the whole heartbeat of a ready node as a client
// sends it: Node.UpdateStatus over TCP (msgpack, yamux) to the leader, with
// benchNodes nodes registered and heartbeating, 16 callers per core.
// cpu-ns/op is the process's user+system CPU per heartbeat; client and
// server share the process, so it over-states the leader's cost, and
// 1e9 / cpu-ns/op bounds from below the heartbeats/s one core absorbs.
func BenchmarkHeartbeatRPC(b *testing.B) {
	const benchNodes = 10000
	s := testServer(b, nil)
	nodes := make([]*structs.Node, benchNodes)
	for i := range nodes {
		nodes[i] = testNode(b, s, 4000, 4096)
	}
	pool := droverrpc.NewPool(0)
	defer pool.Shutdown()
	var next atomic.Uint64
	b.ReportAllocs()
	b.SetParallelism(16)
	cpu0 := cpuTime(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var r structs.NodeUpdateResponse
		for pb.Next() {
			n := nodes[next.Add(1)%benchNodes]
			if err := pool.Call(s.RPCAddr(), "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: n.ID, SecretID: n.SecretID, Status: structs.NodeStatusReady}, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
	if got := s.heartbeats.Count(); got != benchNodes {
		b.Fatalf("%d deadlines armed, want %d", got, benchNodes)
	}
}

// cpuTime is the process's user+system CPU time in nanoseconds.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
