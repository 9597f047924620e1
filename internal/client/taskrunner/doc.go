// Package taskrunner owns the life of one task of one allocation on this
// node: it builds the task's environment, interpolates its driver config,
// starts log collection, starts the task through its driver, waits for it,
// applies the task's restart policy, kills it on request, and keeps the
// task's TaskState (state, failed flag, restarts, timestamps, last events).
// It persists that state and the driver's handle (stored before the task is
// reported running) and, restored after a client restart, re-attaches to
// the task through the driver instead of starting it again (restore.go).
//
// It must never talk to the servers, decide anything about sibling tasks
// (ordering, leader, sibling failure are the alloc runner's job) or touch
// directories other than the ones it is given.
package taskrunner
