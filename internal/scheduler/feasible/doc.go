// Package feasible chooses a node for one task group: a chain of iterators
// that filters nodes (readiness, datacenters and pool, drivers,
// constraints, device asks, distinct hosts, distinct_property) and ranks
// the survivors (bin-packing: by arithmetic for groups without ports or
// devices, else with a port index over the node's proposed allocations and
// device instance allocation (device.go); device affinities, and, when enabled,
// preemption of lower-priority allocations; job anti-affinity;
// rescheduling penalty; node affinity; spread; preemption penalty), visits
// a bounded number of them (at least 100 with affinities or spreads) and
// returns the best.
// SystemStack is the system/sysbatch variant: it checks exactly one given
// node (feasibility and fit) and never ranks across nodes.
//
// It owns feasibility memoisation per computed node class, the per-pass
// cache of each node's proposed allocations and their resource sums
// (context.go; shared across evaluations through state.LiveAllocs), and the
// placement metrics (AllocMetric) that explain failures to users,
// including per-ranker scores of the five best nodes (ScoreMetaData), and
// the optional Explain collector behind `job plan -explain` (explain.go).
//
// It must never write state, submit plans, sleep or read the wall clock;
// randomness comes only from the seeded source in Context so a pass is
// reproducible from (snapshot, eval).
package feasible
