// Package blockedevals owns the leader's set of evaluations that could not
// place everything and wait until capacity could have changed.
//
// An eval that recorded which computed node classes were eligible
// (ClassEligibility) is "captured": Unblock(class) releases it if that class
// was eligible or is unknown to it (a class that appeared after it was
// scheduled). An eval whose constraints escaped class summarisation
// (EscapedComputedClass) is "escaped": any Unblock releases it. At most one
// eval per job is tracked; when a newer one arrives the older one is reported
// by Duplicates so the leader can cancel it through Raft. Untrack forgets a
// job's blocked eval (a later eval for the job completed). UnblockFailed
// releases evals blocked by plan conflicts (TriggeredBy max-plan-attempts).
//
// Race protection: the Raft index of the last Unblock per class is
// remembered; an eval blocked with a SnapshotIndex older than a relevant
// unblock missed it and is handed back to the broker at once.
//
// Released evals are handed to the broker (Enqueuer.EnqueueAll) by one
// goroutine through an in-memory outbox, never by the caller: Block, Reblock
// and Unblock are called from the FSM on Raft's apply path and only take this
// package's mutex for the time of a map update. A slow or stuck broker delays
// releases; it never blocks Raft.
//
// The set exists only on the leader and is rebuilt from the state store on
// every leadership gain: SetEnabled(false) drops everything, including
// releases not yet handed to the broker, and stops the goroutine (without
// waiting for a broker call in progress). Enabling again starts empty.
//
// This package must never block its callers and must never do I/O.
package blockedevals
