// Package heartbeat owns the leader's per-node heartbeat timers: the TTL a
// client is told to heartbeat within, and the detection of nodes that stopped
// heartbeating.
//
// TTL rule: ttl = max(MinTTL, numTimers / MaxPerSecond), then ttl += rand(0..ttl)
// (jitter spreads heartbeats out). The timer is armed for ttl + Grace and ttl
// is returned to the client. TTLs grow with cluster size only through
// MaxPerSecond: it caps the heartbeat rate the leader accepts, so a 5,000-node
// cluster at the default of 50/s gets 100–200 s TTLs. Unlike Nomad, where it
// is fixed at start, the server can tune it at run time (SetMaxPerSecond), for
// example to trade detection latency for leader CPU on large clusters.
//
// On every leadership gain the server calls SetEnabled(true) and then
// ResetFailover for every live node, so nodes get FailoverTTL to find the new
// leader before being declared down. SetEnabled(false) drops every timer.
//
// onExpire is called at most once per armed timer, from its own goroutine and
// never while holding this package's lock; it is never called for a timer that
// was Reset, Cleared or dropped by SetEnabled(false), even if the timer had
// already fired and was racing for the lock.
//
// This package must never block its callers and must never do I/O.
package heartbeat
