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
// Outside dev mode it persists its allocations and task handles in
// <state_dir>/state.db (package state) before acting on them, restores
// them when it starts (restore.go: running tasks re-attached, tasks that
// ended meanwhile reported with their exit codes, anything to start held
// until the first pull from the servers), and leaves tasks running when it
// shuts down; Leave (leave_on_interrupt / leave_on_terminate) and dev mode
// stop them.
//
// The client owns observed state only (ClientStatus, TaskStates, ...). It
// must never change server-owned fields of an allocation, never talk to the
// servers other than through its RPCer, and never decide placement.
package client
