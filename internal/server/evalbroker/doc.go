// Package evalbroker owns the leader's at-least-once queue of evaluations
// waiting for, or being processed by, scheduler workers.
//
// Invariants:
//   - At most one evaluation per (namespace, job) is ready or outstanding at a
//     time; later ones wait in a per-job pending heap. When the outstanding one
//     is acked, the best pending one (highest priority, then newest) is
//     promoted and the rest become cancelable: they are obsolete because the
//     promoted eval looks at the newest job anyway.
//   - Ready evals are served highest priority first, then lowest CreateIndex,
//     then arrival order, across the scheduler types a worker asks for.
//   - A dequeued eval carries a fresh token; it must be acked or nacked with
//     that token before NackTimeout, or the broker nacks it itself. Nacked
//     evals come back after a growing delay; after DeliveryLimit deliveries
//     they go to the FailedQueue for the leader to mark failed.
//   - Evals with Wait > 0 are held by a timer; evals with WaitUntil in the
//     future are held in a delay heap released by one goroutine.
//
// The broker exists only on the leader and is rebuilt from the state store on
// every leadership gain: SetEnabled(false) drops all in-memory state, stops
// every timer and goroutine, and wakes blocked Dequeue calls with ErrDisabled.
//
// This package must never block its callers (Enqueue is called from the FSM
// on Raft's apply path; only Dequeue blocks, by contract) and must never do
// I/O. Time comes from an injectable clock.
package evalbroker
