// Package reconcile decides, for one job, what must change: which
// allocations to place, stop, replace because the job spec changed, or
// replace because their node was lost or they failed.
//
// Compute reconciles count-based jobs (service, batch); ComputeNodes
// reconciles system and sysbatch jobs, whose desired state is one
// allocation per task group on every eligible node.
//
// Both are pure functions of their inputs (job, the job's allocations,
// nodes, now). They must never read state, the clock, or randomness, and
// never choose nodes: placement belongs to the scheduler's
// feasibility/ranking chain. Their results are descriptions the scheduler
// turns into a plan.
package reconcile
