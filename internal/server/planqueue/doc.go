// Package planqueue owns the leader's queue of plans submitted by scheduler
// workers and waiting for the single plan applier goroutine.
//
// Workers call Enqueue and wait on the returned PendingPlan; the applier calls
// Dequeue (then TryDequeue for the plans queued behind it, to commit them
// together), verifies and commits the plans, then calls Respond once each.
// Plans are served by priority (Plan.Priority, higher first), then in the
// order they arrived.
//
// The queue exists only on the leader and is rebuilt empty on every
// leadership gain: SetEnabled(false) fails every queued plan with ErrDisabled
// and wakes a blocked Dequeue with ErrDisabled. Plans already handed to the
// applier are the applier's to answer.
//
// This package must never block its callers (apart from Dequeue and Wait,
// which block by contract) and must never do I/O.
package planqueue
