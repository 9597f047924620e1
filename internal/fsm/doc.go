// Package fsm owns Drover's Raft finite state machine: it decodes committed
// log entries (one structs.MessageType byte + msgpack body), applies them to
// the state store, tells leader-only services what changed through an
// EventSink, and streams/restores Raft snapshots of the whole store.
//
// It must never be non-deterministic: no clocks, no randomness, no ID
// generation inside Apply — everything comes from the log entry and the
// current state, so every server reaches the same state. It must never block
// Raft: EventSink implementations buffer, and the FSM holds no lock while
// calling them. It must never panic on a bad entry; it returns the error.
//
// Each entry is applied between the store's BeginEntry and EndEntry, so
// snapshots (schedulers, blocking queries) see an entry whole even when it
// writes in several transactions; an EventSink must therefore never take a
// snapshot of the store. Snapshots are persisted with map keys sorted, so
// equal states persist equal bytes in every process
// (TestDeterminismAcrossProcesses).
package fsm
