// Package scheduler turns an evaluation into a plan: given a state snapshot
// and an evaluation it reconciles the job's desired state with its
// allocations (package reconcile), chooses nodes for new allocations
// (package feasible), submits the plan through the Planner and records
// the evaluation's outcome (complete, blocked follow-up, failed).
// GenericScheduler handles service and batch jobs, SystemScheduler system
// and sysbatch jobs (one allocation per group on every eligible node).
//
// Schedulers are pure with respect to the cluster: they read only the
// State they are given, write only through the Planner, never sleep, and
// read time only through the injected clock. Concurrency safety comes
// from the plan applier re-verifying every plan, not from here.
package scheduler
