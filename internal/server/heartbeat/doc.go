// Package heartbeat owns the leader's per-node heartbeat deadlines: the TTL a
// client is told to heartbeat within, and the detection of nodes that stopped
// heartbeating.
//
// Why not Nomad's rule. Nomad sizes the TTL as max(MinTTL, nodes /
// MaxPerSecond) with MaxPerSecond = 50, to cap the heartbeat RPC load on the
// leader; a 5,000-node cluster then gets 100–200 s TTLs and a lost node is
// only declared down minutes later. Drover makes heartbeats cheap instead and
// keeps the TTL fixed:
//
//   - TTL = max(MinTTL, nodes / MaxPerSecond), then ttl += rand(0..Jitter·ttl).
//     The defaults (MinTTL 10 s, MaxPerSecond 5,000/s, Jitter 0.2) give
//     10–12 s TTLs up to 50,000 nodes: MaxPerSecond is now a safety valve
//     sized from the measured cost of a heartbeat, not a knob that makes
//     detection slower as the cluster grows. The deadline is now + TTL +
//     Grace (10 s, fixed), so a silent node is declared down 10–22.5 s after
//     its last heartbeat whatever the cluster size.
//   - Per heartbeat (Reset of a known node): one map lookup and one atomic
//     store under a shared lock. No timer, no allocation, no copy; heartbeats
//     never wait for each other. BenchmarkReset measures it.
//   - Detection: one sweeper, a single chain of clock timers every
//     SweepInterval (500 ms), over one min-heap of deadlines. The heap is
//     maintained lazily: Reset only moves a node's deadline; the sweeper,
//     when an entry reaches the top, either expires it or re-files it at its
//     current deadline (so each node costs the sweeper O(log n) once per
//     TTL, not per heartbeat). A deadline that moves earlier (the first
//     heartbeat after a failover) is fixed in the heap at once.
//   - Every node that expired in one sweep window is reported in ONE call to
//     onExpire, so the server marks them down in one Raft entry with one
//     node-update eval per affected job. The next sweep is scheduled only
//     after onExpire returns: batches never overlap, and nodes expiring while
//     a batch is being written form the next batch.
//
// On every leadership gain the server calls SetEnabled(true) and then
// ResetFailover for every live node, so nodes get FailoverTTL (+ Grace) to
// find the new leader before being declared down: an election never marks
// the fleet down. SetEnabled(false) drops every deadline and stops the
// sweeper; a sweep of an earlier leadership term never reports anything
// after that, except a batch it had already collected, which the caller
// must re-check against its own leadership.
//
// onExpire is called from the sweeper's goroutine, never while holding this
// package's lock, and at most once per armed deadline: a node that was Reset
// (to a later deadline), Cleared or dropped before the sweep looked at it is
// not reported.
//
// This package must never block its callers and must never do I/O.
package heartbeat
