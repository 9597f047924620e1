// Package state owns Drover's server state: a go-memdb database holding jobs,
// job versions and summaries, evaluations, allocations, nodes, deployments,
// namespaces, keyring root keys, cluster metadata and the last launch of each
// periodic job, plus the "index" table
// that records the Raft index of the last write to each table.
//
// It provides the reads every server component uses (with watch sets that
// drive blocking queries), the writes the FSM applies, O(1) snapshots for
// schedulers, and the bulk loader used to restore Raft snapshots. Client
// alloc pulls wait on a per-node channel (node_watch.go) that committed
// writes close only for changes the node's client acts on.
//
// Rules this package keeps:
//   - Objects returned by reads are immutable. Writers copy before they modify,
//     and writes never mutate the objects passed in by callers beyond what the
//     method documents.
//   - Every write is a function of its arguments and the current state only:
//     no clocks, no randomness, no ID generation. The Raft index is passed in.
//   - Every write bumps the "index" entry of each table it touches. The
//     read-side memos shared by a store and its snapshots do not key on
//     it (one Raft entry may write a table in several transactions at one
//     index): the ready-node list is kept per version of the nodes table's
//     radix root (ready_nodes.go) and each node's
//     allocations per version of its radix subtree (node_allocs.go; the
//     scheduler's live view and the client pull's view). Alloc writes
//     commit through commitAllocs, which moves the touched nodes' current
//     entries on to the new version; a write that does not only costs
//     readers a miss.
//
// Snapshots (StateSnapshot) have read methods only: writes exist on
// StateStore alone, and a dry run that must write takes a Scratch copy.
// They are taken between Raft entries (entry_gate.go), so no reader sees
// part of an entry that writes in several transactions at one index.
//
// It must never do I/O, talk to other servers, or call leader-only services
// (broker, blocked evals, ...): the FSM does that after a write commits.
package state
