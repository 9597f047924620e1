// Package structs owns Drover's engine types: the objects that flow through the
// server (Job, Evaluation, Allocation, Node, Deployment, Plan) and the
// request/response shapes of the internal RPCs.
//
// Field names follow Nomad's so that JSON encoding of these types matches the
// shapes the official github.com/hashicorp/nomad/api client decodes. Spec parts
// the engine does not interpret (services, templates, artifacts, vault, ...)
// are carried as the api types themselves so nothing a user submits is lost.
//
// This package must never do I/O, read clocks or generate randomness in methods
// the FSM calls: values like IDs and timestamps are set by callers before a
// Raft entry is written.
package structs
