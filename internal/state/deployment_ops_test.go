package state

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

func deployFixture(t *testing.T) (*StateStore, *structs.Job) {
	t.Helper()
	s := testStore(t)
	job := storedJob(t, s, 1, mockJob("web"))
	d := &structs.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobVersion: job.Version, JobCreateIndex: job.CreateIndex,
		Status:     structs.DeploymentStatusRunning,
		TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 2, ProgressDeadline: time.Minute}}}
	a1, a2 := mockAlloc("a1", "n1", job), mockAlloc("a2", "n1", job)
	a1.DeploymentID, a2.DeploymentID = "d1", "d1"
	a1.ModifyTime, a2.ModifyTime = time.Unix(100, 0).UnixNano(), time.Unix(100, 0).UnixNano()
	must(t, s.UpsertPlanResults(2, &structs.ApplyPlanResultsRequest{Job: job, Deployment: d, Alloc: []*structs.Allocation{a1, a2}}))
	return s, job
}

func groupState(t *testing.T, s *StateStore, id string) *structs.DeploymentState {
	t.Helper()
	d, err := s.DeploymentByID(nil, id)
	must(t, err)
	return d.TaskGroups["web"]
}

// A healthy allocation set unhealthy by hand moves between the counters;
// the first placement starts the progress deadline.
func TestDeploymentAllocHealth_CountersFollowOverrides(t *testing.T) {
	s, _ := deployFixture(t)
	g := groupState(t, s, "d1")
	if g.PlacedAllocs != 2 || !g.RequireProgressBy.Equal(time.Unix(100, 0).Add(time.Minute)) {
		t.Fatalf("after placement: %+v", g)
	}
	at := time.Unix(200, 0).UTC()
	must(t, s.UpdateDeploymentAllocHealth(3, &structs.ApplyDeploymentAllocHealthRequest{
		DeploymentAllocHealthRequest: structs.DeploymentAllocHealthRequest{DeploymentID: "d1", HealthyAllocationIDs: []string{"a1", "a2"}},
		Timestamp:                    at}))
	g = groupState(t, s, "d1")
	if g.HealthyAllocs != 2 || g.UnhealthyAllocs != 0 || !g.RequireProgressBy.Equal(at.Add(time.Minute)) {
		t.Fatalf("after healthy: %+v", g)
	}
	must(t, s.UpdateDeploymentAllocHealth(4, &structs.ApplyDeploymentAllocHealthRequest{
		DeploymentAllocHealthRequest: structs.DeploymentAllocHealthRequest{DeploymentID: "d1", UnhealthyAllocationIDs: []string{"a2"}},
		Timestamp:                    at.Add(time.Second)}))
	g = groupState(t, s, "d1")
	if g.HealthyAllocs != 1 || g.UnhealthyAllocs != 1 || g.PlacedAllocs != 2 {
		t.Fatalf("after override: %+v", g)
	}
	// An earlier health timestamp never pulls the deadline back.
	if !g.RequireProgressBy.Equal(at.Add(time.Minute)) {
		t.Fatalf("deadline moved: %v", g.RequireProgressBy)
	}
}

// An allocation updated in place into a newer deployment counts as placed
// there and starts it without the old deployment's health.
func TestInPlaceUpdateIntoNewDeploymentCountsPlaced(t *testing.T) {
	s, job := deployFixture(t)
	must(t, s.UpdateDeploymentAllocHealth(3, &structs.ApplyDeploymentAllocHealthRequest{
		DeploymentAllocHealthRequest: structs.DeploymentAllocHealthRequest{DeploymentID: "d1", HealthyAllocationIDs: []string{"a1"}},
		Timestamp:                    time.Unix(200, 0)}))
	d2 := &structs.Deployment{ID: "d2", Namespace: "default", JobID: "web", JobCreateIndex: job.CreateIndex, Status: structs.DeploymentStatusRunning,
		TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 2}}}
	a1, err := s.AllocByID(nil, "a1")
	must(t, err)
	up := *a1
	up.DeploymentID = "d2"
	up.DeploymentStatus = nil
	must(t, s.UpsertPlanResults(4, &structs.ApplyPlanResultsRequest{Job: job, Deployment: d2, Alloc: []*structs.Allocation{&up}}))
	if g := groupState(t, s, "d2"); g.PlacedAllocs != 1 || g.HealthyAllocs != 0 {
		t.Fatalf("d2 after in-place update: %+v", g)
	}
	a1, _ = s.AllocByID(nil, "a1")
	if a1.DeploymentStatus != nil {
		t.Fatalf("old deployment's health kept: %+v", a1.DeploymentStatus)
	}
}

// A plan that marks a deployment successful marks its job version stable.
func TestPlanDeploymentSuccessMarksVersionStable(t *testing.T) {
	s, job := deployFixture(t)
	must(t, s.UpsertPlanResults(3, &structs.ApplyPlanResultsRequest{Job: job, DeploymentUpdates: []*structs.DeploymentStatusUpdate{
		{DeploymentID: "d1", Status: structs.DeploymentStatusSuccessful, StatusDescription: "Deployment completed successfully"}}}))
	v, err := s.JobByIDAndVersion(nil, "default", "web", job.Version)
	must(t, err)
	if v == nil || !v.Stable {
		t.Fatalf("version %d not stable: %+v", job.Version, v)
	}
	cur, _ := s.JobByID(nil, "default", "web")
	if !cur.Stable || cur.JobModifyIndex != job.JobModifyIndex {
		t.Fatalf("current job: stable=%v JobModifyIndex=%d", cur.Stable, cur.JobModifyIndex)
	}
	// A plan that writes the deployment object as successful marks it too.
	s3, job3 := deployFixture(t)
	d, _ := s3.DeploymentByID(nil, "d1")
	d = copyDeployment(d)
	d.Status = structs.DeploymentStatusSuccessful
	must(t, s3.UpsertPlanResults(3, &structs.ApplyPlanResultsRequest{Job: job3, Deployment: d}))
	if v, _ := s3.JobByIDAndVersion(nil, "default", "web", job3.Version); !v.Stable {
		t.Fatal("deployment written successful did not mark its version stable")
	}
	// A failed deployment marks nothing.
	s2, job2 := deployFixture(t)
	must(t, s2.UpsertPlanResults(3, &structs.ApplyPlanResultsRequest{Job: job2, DeploymentUpdates: []*structs.DeploymentStatusUpdate{
		{DeploymentID: "d1", Status: structs.DeploymentStatusFailed}}}))
	if v, _ := s2.JobByIDAndVersion(nil, "default", "web", job2.Version); v.Stable {
		t.Fatal("failed deployment marked its version stable")
	}
}

// Promotion checks read what the write would refuse.
func TestCheckDeploymentPromotion(t *testing.T) {
	s, job := deployFixture(t)
	c := mockAlloc("c1", "n1", job)
	c.DeploymentID = "d1"
	c.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	d, _ := s.DeploymentByID(nil, "d1")
	d = copyDeployment(d)
	d.TaskGroups["web"].DesiredCanaries = 1
	// A canary not placed yet is not ready either.
	if err := s.CheckDeploymentPromotion(d, &structs.DeploymentPromoteRequest{DeploymentID: "d1", All: true}); err == nil ||
		err.Error() != `Task group "web" has 0/1 healthy allocations` {
		t.Fatalf("check before placement = %v", err)
	}
	d.TaskGroups["web"].PlacedCanaries = []string{"c1"}
	must(t, s.UpsertPlanResults(3, &structs.ApplyPlanResultsRequest{Job: job, Deployment: d, Alloc: []*structs.Allocation{c}}))
	d, _ = s.DeploymentByID(nil, "d1")
	req := &structs.DeploymentPromoteRequest{DeploymentID: "d1", All: true}
	if err := s.CheckDeploymentPromotion(d, req); err == nil || err.Error() != `Task group "web" has 0/1 healthy allocations` {
		t.Fatalf("check = %v", err)
	}
	must(t, s.UpdateDeploymentAllocHealth(4, &structs.ApplyDeploymentAllocHealthRequest{
		DeploymentAllocHealthRequest: structs.DeploymentAllocHealthRequest{DeploymentID: "d1", HealthyAllocationIDs: []string{"c1"}},
		Timestamp:                    time.Unix(300, 0)}))
	if err := s.CheckDeploymentPromotion(d, req); err != nil {
		t.Fatalf("check of a healthy canary: %v", err)
	}
	must(t, s.UpdateDeploymentPromotion(5, &structs.ApplyDeploymentPromoteRequest{DeploymentPromoteRequest: *req}))
	if c, _ := s.AllocByID(nil, "c1"); c.DeploymentStatus.Canary {
		t.Fatal("promoted canary still a canary")
	}
	// Non-canary allocations are untouched.
	if a, _ := s.AllocByID(nil, "a1"); a.ModifyIndex != 2 {
		t.Fatalf("a1 rewritten at %d", a.ModifyIndex)
	}
}
