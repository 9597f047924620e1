// Package invariant checks a cluster state snapshot for the properties the
// scheduler, the plan applier and the FSM must keep together, whatever
// order concurrent workers proposed their plans in. It is part of the
// product's test kit: run a scenario, take a snapshot, call Check and
// expect no violations.
//
// Check reports, per node, over the allocations that still hold node
// resources (not terminal on the server or the client side: the same set
// the plan applier counts):
//   - overcommit: summed cpu, memory or disk above what the node offers
//     after its reserved resources, or more allocations than NodeMaxAllocs;
//   - port: one (host IP, port) used by two allocations, or twice by one,
//     a port the node reserves (reserved host ports, per-address reserved
//     ports), a port on an address the node does not have, or a dynamic
//     port outside the node's dynamic range (MinDynamicPort–MaxDynamicPort);
//   - device: one device instance granted twice, or an instance the node
//     does not have;
//
// and, across the cluster:
//   - alloc: a live allocation on a node the state does not know, or two
//     live allocations of one job with the same name (job.group[i]), or a
//     live job's group with fewer live allocations than its count and no
//     blocked evaluation to account for the rest (an allocation lost);
//   - eval: an evaluation neither terminal (complete, failed, canceled)
//     nor blocked with a reason (FailedTGAllocs or a status description).
//
// Check only reads the snapshot; it never writes state and never fails
// fast: it returns every violation it finds, each readable on its own.
package invariant
