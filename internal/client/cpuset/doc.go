// Package cpuset owns the node's shared cpuset: the CPUs a task without
// reserved cores (`resources { cores = N }`) may run on. It is the node's
// usable cores (the reservable cores less the client's `reserved { cores }`)
// less every core a live allocation on the node holds.
//
// The alloc runners feed it: an allocation's reserved cores are added when
// its runner is built (so a client restart derives the set from the
// restored allocations before any task is re-attached) and removed when its
// runner has finished for good. The task runners register every running
// task without reserved cores with how to move it (the driver's
// drivers.CpusetUpdater); whenever the shared set changes, the Manager
// moves every registered task onto the new set, one change at a time and
// in order, so a task never keeps an older set than the newest.
//
// It must never decide which cores an allocation gets (the scheduler does)
// nor talk to the servers or the drivers other than through the functions
// it is given.
package cpuset
