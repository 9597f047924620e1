// Package allocrunner owns one allocation on this node: its directory, one
// TaskRunner per task started in lifecycle order (prestart, main and
// poststart, poststop), the leader and sibling-failure rules, the
// allocation's ClientStatus computed from its task states, and stopping
// everything when the server asks for it.
//
// It reports every change through a callback and must never talk to the
// servers itself, nor decide placement or rescheduling: it only observes and
// executes what the server's copy of the allocation says.
package allocrunner
