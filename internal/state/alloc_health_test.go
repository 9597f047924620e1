package state

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

func healthOf(t *testing.T, s *StateStore, id string) *structs.AllocDeploymentStatus {
	t.Helper()
	a, err := s.AllocByID(nil, id)
	must(t, err)
	return a.DeploymentStatus
}

func groupOf(t *testing.T, s *StateStore, depID string) *structs.DeploymentState {
	t.Helper()
	d, err := s.DeploymentByID(nil, depID)
	must(t, err)
	return d.TaskGroups["web"]
}

// A client sends its decided health with every later update of the
// allocation: the deployment counts it once, and the health's ModifyIndex
// (what the deployment watcher compares with its evaluations) stays where
// the health was decided. The canary flag stays the server's.
func TestClientHealthCountsOnce(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	must(t, s.UpsertDeployment(11, &structs.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobCreateIndex: job.CreateIndex,
		Status: structs.DeploymentStatusRunning, TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 1}}}))
	a := mockAlloc("a", "n1", job)
	a.DeploymentID = "d1"
	a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	must(t, s.UpsertAllocs(12, []*structs.Allocation{a}))

	healthy := &structs.AllocDeploymentStatus{Healthy: boolPtr(true), Timestamp: time.Unix(100, 0)}
	for i := uint64(13); i <= 15; i++ {
		// A later update repeats the health beside a new task event.
		must(t, s.UpdateAllocsFromClient(i, []*structs.Allocation{{ID: "a", NodeID: "n1", ClientStatus: structs.AllocClientStatusRunning,
			DeploymentStatus: healthy, TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateRunning, Restarts: i}}}}))
	}
	if st := groupOf(t, s, "d1"); st.HealthyAllocs != 1 || st.UnhealthyAllocs != 0 {
		t.Fatalf("deployment counted %d healthy, %d unhealthy", st.HealthyAllocs, st.UnhealthyAllocs)
	}
	ds := healthOf(t, s, "a")
	if ds.Healthy == nil || !*ds.Healthy || !ds.Canary || ds.ModifyIndex != 13 || !ds.Timestamp.Equal(time.Unix(100, 0)) {
		t.Fatalf("alloc health %+v, want healthy canary decided at index 13", ds)
	}
	// An update without health keeps it.
	must(t, s.UpdateAllocsFromClient(16, []*structs.Allocation{{ID: "a", NodeID: "n1", ClientStatus: structs.AllocClientStatusRunning}}))
	if ds := healthOf(t, s, "a"); ds == nil || ds.Healthy == nil || !*ds.Healthy {
		t.Fatalf("health lost: %+v", ds)
	}
}

// Health belongs to a deployment: an in-place update that moves an
// allocation into a new deployment drops the old deployment's health (the
// client then judges it again for the new one, counted there), while a
// plan's rewrite of the allocation inside the same deployment keeps it.
func TestInPlaceUpdateIntoNewDeploymentDropsHealth(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	for i, id := range []string{"d1", "d2"} {
		must(t, s.UpsertDeployment(uint64(11+i), &structs.Deployment{ID: id, Namespace: "default", JobID: "web", JobCreateIndex: job.CreateIndex,
			Status: structs.DeploymentStatusRunning, TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 1}}}))
	}
	a := mockAlloc("a", "n1", job)
	a.DeploymentID = "d1"
	must(t, s.UpsertAllocs(13, []*structs.Allocation{a}))
	must(t, s.UpdateAllocsFromClient(14, []*structs.Allocation{{ID: "a", NodeID: "n1", ClientStatus: structs.AllocClientStatusRunning,
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: boolPtr(true), Timestamp: time.Unix(100, 0)}}}))

	same := mockAlloc("a", "n1", job)
	same.DeploymentID = "d1"
	must(t, s.UpsertAllocs(15, []*structs.Allocation{same}))
	if ds := healthOf(t, s, "a"); ds == nil || ds.Healthy == nil || !*ds.Healthy {
		t.Fatalf("rewrite within the deployment lost the health: %+v", ds)
	}

	moved := mockAlloc("a", "n1", job)
	moved.DeploymentID = "d2"
	must(t, s.UpsertAllocs(16, []*structs.Allocation{moved}))
	if ds := healthOf(t, s, "a"); ds != nil && ds.Healthy != nil {
		t.Fatalf("moved into d2 with d1's health %+v", ds)
	}
	must(t, s.UpdateAllocsFromClient(17, []*structs.Allocation{{ID: "a", NodeID: "n1", ClientStatus: structs.AllocClientStatusRunning,
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: boolPtr(true), Timestamp: time.Unix(200, 0)}}}))
	if st := groupOf(t, s, "d2"); st.HealthyAllocs != 1 {
		t.Fatalf("d2 counted %d healthy", st.HealthyAllocs)
	}
	if st := groupOf(t, s, "d1"); st.HealthyAllocs != 1 {
		t.Fatalf("d1 counted %d healthy", st.HealthyAllocs)
	}
}
