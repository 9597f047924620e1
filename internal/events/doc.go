// Package events owns the server's event stream (GET /v1/event/stream): it
// turns what each Raft entry changed in the state store into Nomad's event
// batches ({"Index": n, "Events": [...]}, one batch per entry), keeps the
// last batches in a bounded ring buffer, and lets subscribers read that
// ring with their own cursor, filtered by topic, key and namespace.
//
// The FSM publishes into the Broker after each entry; Publish takes one
// short lock and never waits for a subscriber, so a slow or stalled reader
// can never hold up Raft. A subscriber that falls so far behind that the
// ring has overwritten its next batch is told so (ErrFellBehind) and must
// resubscribe from an index.
//
// Publish stores only the changed objects' pointers (the store never
// mutates an object it has stored); events are built and encoded to JSON
// on first read, once per event however many subscribers read it, and the
// readers that take a whole batch share one frame of it, so an entry
// nobody reads costs a few small allocations and ten readers cost little
// more than one.
//
// It must never take a snapshot of the state store (Publish runs inside
// the FSM's entry bracket) and never block the publisher.
package events
