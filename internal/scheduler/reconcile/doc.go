// Package reconcile decides, for one job, what must change: which
// allocations to place, stop, update in place, replace destructively,
// reschedule now or later, mark disconnected or reconnected, and which
// deployment the changes belong to.
//
// Compute reconciles count-based jobs (service, batch); ComputeNodes
// reconciles system and sysbatch jobs, whose desired state is one
// allocation per task group on every eligible node.
//
// Compute runs, per task group, a fixed sequence of steps, each in its own
// file and tested alone; a step changes only the sets it is handed (by
// pointer) and the result:
//
//	deployment.go  which deployment is current, its group state, creation, completion
//	classify.go    buckets: untainted, migrate, lost, disconnecting, reconnecting, ignore, expiring
//	canary.go      stop unneeded canaries; place the ones a deployment wants
//	reschedule.go  failed allocations: reschedule now, later (follow-up evals), or keep
//	disconnect.go  disconnect/reconnect handling and batched follow-up evaluations
//	stopafter.go   lost allocations a client still stops itself (stop_on_client_after)
//	names.go       name indexes: lowest free for placements, highest for stops
//	stop.go        what the group no longer needs
//	updates.go     ignore, in-place or destructive per allocation (TasksUpdated, updated.go)
//	budget.go      the rolling-update budget (max_parallel)
//	place.go       placements, destructive updates within the budget, migrations
//
// An allocation is on the job's current version when its job's Version
// and CreateIndex match the job's.
//
// Both are pure functions of their inputs (job, latest deployment, the
// job's allocations, tainted nodes, now, the evaluation). They never read
// state, the clock, or randomness (IDs come from Input.NewID), and never
// choose nodes: placement belongs to the scheduler's feasibility/ranking
// chain, and whether an in-place update still fits is asked of the
// scheduler through Input.Update. Their results are descriptions the
// scheduler turns into a plan.
package reconcile
