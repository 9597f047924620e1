package reconcile

import (
	"github.com/drover-project/drover/internal/structs"
)

// computeUnderProvisionedBy is the group's rolling-update budget: how many
// allocations this pass may place or replace. Without a strategy, or with
// nothing to replace or migrate, the whole count; max_parallel when no
// deployment exists yet; nothing while the deployment is paused, failed or
// waiting on canaries; otherwise max_parallel less the deployment's
// allocations not yet healthy, and nothing at all once one is unhealthy.
func (r *reconciler) computeUnderProvisionedBy(tg *structs.TaskGroup, untainted, destructive, migrate allocSet, canarying bool) int {
	if r.strategy(tg) == nil || len(destructive)+len(migrate) == 0 {
		return tg.Count
	}
	if r.deployment == nil {
		return maxParallel(tg.Update)
	}
	if r.deploymentPaused || r.deploymentFailed || canarying {
		return 0
	}
	limit := maxParallel(tg.Update)
	partOf, _ := untainted.byDeployment(r.deployment.ID)
	for _, a := range partOf {
		if isUnhealthy(a) {
			return 0
		}
		if !isHealthy(a) {
			limit--
		}
	}
	return max(limit, 0)
}
