// Package deploywatch is the leader-only deployment watcher. It owns the
// decisions that move an active deployment between the scheduler's passes:
//
//   - an allocation of the deployment became healthy after the job's latest
//     evaluation: create an evaluation (trigger "deployment-watcher") so the
//     scheduler places the next batch; such evaluations are batched per job
//     within EvalBatchWindow (1 s);
//   - an allocation became unhealthy: mark it for replacement
//     (DesiredTransition.Reschedule, batched across deployments within
//     AllocBatchWindow, 250 ms), unless the deployment must fail at once (its
//     group has no progress deadline, or the allocation's reschedule attempts
//     are used up);
//   - every group with canaries auto-promotes and all its canaries are placed
//     and healthy: promote the deployment;
//   - the earliest RequireProgressBy of the unfinished groups passed (and the
//     deployment is not paused): fail it;
//   - a failing deployment with a group that auto-reverts registers the
//     latest stable job version older than the deployment's, in the same Raft
//     entry as the failure.
//
// Everything it knows is rebuilt from the state store when it is enabled
// (leadership gained) and dropped when it is disabled (leadership lost), so a
// new leader resumes every deployment where the old one left it. It watches
// the state store with memdb watch sets (one goroutine per active deployment
// plus one for the deployment table), with every state query paced by one
// shared rate limit.
//
// It must never write to the state store itself: every change goes through
// the Applier (the server's Raft entries 14, 15, 27 and eval updates). It never
// blocks the FSM or Raft: it only reads snapshots and waits on watch channels.
package deploywatch
