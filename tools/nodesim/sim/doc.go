// Package sim simulates many Drover client nodes in one process for scale
// benchmarks. Every simulated node speaks the real client–server protocol
// over TCP to a server's RPC port (Node.Register, Node.UpdateStatus
// heartbeats, blocking Node.GetClientAllocs pulls, Alloc.GetAllocs,
// Node.UpdateAlloc), multiplexed over a few internal/rpc Pools, so the server
// cannot tell it from real clients except that nothing is executed: a
// simulated driver reports each allocation running after a delay (and batch
// ones complete after another).
//
// Nodes can be failed (their allocations fail, new ones fail on arrival) or
// lost (they stop heartbeating and pulling, so the server marks them down)
// through Sim's methods or the control HTTP handler.
//
// Memory is the point: per node the simulator keeps only IDs, a small map of
// allocation states and one goroutine parked in a blocking pull; everything
// else (the registered Node, fetched allocations) is dropped after use. It
// must never run tasks, never read server state other than through the RPCs a
// real client uses, and never bypass the Pool.
package sim
