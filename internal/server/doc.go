// Package server owns the server agent: Raft and the FSM, the RPC endpoints
// (Job, Node, Eval, Alloc, Plan, Status, Keyring, ...), the leadership loop
// and the leader-only services it starts and stops (eval broker, blocked
// evals, plan queue and applier, heartbeat deadlines, keyring bootstrap, the
// periodic dispatcher, core garbage collection: core_gc.go runs what
// coregc decides, the rolling-restart runner of job_restart.go), and the
// scheduler workers. Nodes whose heartbeats
// stop are marked down in batches: one Raft entry per heartbeat sweep
// carrying every silent node and one node-update eval per affected job
// (heartbeat_expire.go). Servers find each other by serf LAN gossip
// (serf*.go): bootstrap_expect bootstraps Raft once, and the leader adds
// joining servers to Raft and removes those that leave; autopilot
// (autopilot.go) tracks server health and removes dead servers.
//
// Invariants:
//   - Every write goes through Raft; the FSM is deterministic, so IDs and
//     timestamps are chosen here before an entry is written.
//   - Nothing on Raft's leadership-notification or apply path blocks: the
//     leadership monitor only flips state and starts/stops a goroutine, and
//     the FSM's event sink only enqueues into non-blocking components.
//   - Leader-only services are rebuilt from state after a Raft barrier each
//     time leadership is gained and torn down completely when it is lost.
package server
