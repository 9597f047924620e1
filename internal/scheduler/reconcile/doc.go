// Package reconcile decides, for one job, what must change: which
// allocations to place, stop, replace because the job spec changed, or
// replace because their node was lost or they failed.
//
// Compute is a pure function of (job, the job's allocations, tainted nodes,
// now). It must never read state, the clock, or randomness, and never
// choose nodes: placement belongs to the scheduler's feasibility/ranking
// chain. Its results are descriptions the scheduler turns into a plan.
package reconcile
