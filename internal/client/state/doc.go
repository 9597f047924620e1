// Package state owns the client's persistent state: a bbolt database at
// <state_dir>/state.db holding, per allocation, the server's copy of the
// allocation (with its reschedule tracker), the deployment health the client
// observed, the latest results of its Nomad-native service checks, and per
// task its TaskState and its local state (the driver's
// task handle and the restart tracker). A restarted client reads it back to
// re-attach to the tasks that kept running and to report those that ended
// while it was down.
//
// Writes are synchronous (fsynced) and made before the client acts on them:
// the handle of a task is stored before the task is reported running. A
// write whose bytes equal what is already stored is skipped.
//
// The package stores and loads; it must never decide what to do with what
// it loads, talk to the servers or to drivers.
package state
