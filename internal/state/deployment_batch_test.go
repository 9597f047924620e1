package state

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// recount is the deployment's group counters recomputed plainly from its
// allocations.
func recount(t *testing.T, s *StateStore, deploymentID string) (placed, healthy, unhealthy int, canaries map[string]bool) {
	t.Helper()
	iter, err := s.Allocs(nil)
	must(t, err)
	canaries = map[string]bool{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		a := raw.(*structs.Allocation)
		if a.DeploymentID != deploymentID {
			continue
		}
		placed++
		if ds := a.DeploymentStatus; ds != nil {
			if ds.Canary {
				canaries[a.ID] = true
			}
			if ds.Healthy != nil {
				if *ds.Healthy {
					healthy++
				} else {
					unhealthy++
				}
			}
		}
	}
	return
}

// A deployment's counters are written once per write (plan, client update)
// from a copy taken at its first allocation; they must equal a plain
// recount of its allocations after writes of many allocations each, two
// plans at one Raft index, and client updates mixing health reports for
// the same deployment.
func TestDeploymentCountersBatchedPerWriteMatchRecount(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	must(t, s.UpsertDeployment(11, &structs.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobCreateIndex: job.CreateIndex,
		Status: structs.DeploymentStatusRunning, TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 200, DesiredCanaries: 5}}}))
	rng := rand.New(rand.NewPCG(7, 7))
	var ids []string
	plan := func(n, from int) *structs.ApplyPlanResultsRequest {
		req := &structs.ApplyPlanResultsRequest{Job: job}
		for i := from; i < from+n; i++ {
			a := mockAlloc(fmt.Sprintf("a%03d", i), fmt.Sprintf("n%d", i%7), job)
			a.DeploymentID = "d1"
			if i < 5 {
				a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
			}
			req.Alloc = append(req.Alloc, a)
			ids = append(ids, a.ID)
		}
		return req
	}
	// Two plans committed together at index 12, then one more.
	must(t, s.UpsertPlanResultsBatch(12, []*structs.ApplyPlanResultsRequest{plan(60, 0), plan(60, 60)}))
	must(t, s.UpsertPlanResults(13, plan(80, 120)))
	// Client updates: random subsets report health, some flip, repeats.
	for idx := uint64(14); idx < 24; idx++ {
		var ups []*structs.Allocation
		for _, id := range ids {
			if rng.IntN(3) != 0 {
				continue
			}
			h := rng.IntN(5) != 0
			ups = append(ups, &structs.Allocation{ID: id, NodeID: "n0", ClientStatus: structs.AllocClientStatusRunning,
				DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &h, Timestamp: time.Unix(int64(idx), 0)}})
		}
		must(t, s.UpdateAllocsFromClient(idx, ups))
		placed, healthy, unhealthy, canaries := recount(t, s, "d1")
		st := groupOf(t, s, "d1")
		if st.PlacedAllocs != placed || st.HealthyAllocs != healthy || st.UnhealthyAllocs != unhealthy || len(st.PlacedCanaries) != len(canaries) {
			t.Fatalf("index %d: deployment says placed %d healthy %d unhealthy %d canaries %d; recount %d %d %d %d",
				idx, st.PlacedAllocs, st.HealthyAllocs, st.UnhealthyAllocs, len(st.PlacedCanaries), placed, healthy, unhealthy, len(canaries))
		}
	}
	d, err := s.DeploymentByID(nil, "d1")
	must(t, err)
	if d.ModifyIndex != 23 {
		t.Fatalf("deployment ModifyIndex %d, want 23 (the last write)", d.ModifyIndex)
	}
}
