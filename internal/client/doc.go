// Package client is Drover's client agent: it fingerprints the node,
// registers it with the servers and keeps it alive with heartbeats, pulls the
// node's allocations with blocking queries, runs them through alloc runners,
// pushes their observed state back in batches, serves the allocation
// filesystem and logs to the HTTP layer, keeps the node's dynamic meta
// (set through the API, persisted in its state dir, merged over the
// configured meta). It garbage collects finished allocations (runner and
// alloc dir) past gc_max_allocs or the disk thresholds, on request, and when
// the servers collect them (gc.go), and restarts tasks in place when the
// servers ask (Allocation.RestartRequest, restart_request.go).
//
// The client owns observed state only (ClientStatus, TaskStates, ...). It
// must never change server-owned fields of an allocation, never talk to the
// servers other than through its RPCer, and never decide placement.
package client
