package server

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/structs"
)

// The deployment health a client sends with Node.UpdateAlloc crosses Raft
// intact (health and its time), keeps the servers' canary flag, and counts
// once in the deployment however often the client repeats it.
func TestUpdateAllocCarriesDeploymentHealth(t *testing.T) {
	s := testServer(t, func(c *Config) { c.EnabledSchedulers = []string{structs.JobTypeSysBatch} })
	node := testNode(t, s, 4000, 4096)
	register(t, s, testJob("web", 1))
	job, err := s.State().JobByID(nil, "default", "web")
	if err != nil || job == nil {
		t.Fatalf("job: %v", err)
	}
	dep := &structs.Deployment{ID: uuid.NewString(), Namespace: "default", JobID: "web", JobVersion: job.Version,
		JobCreateIndex: job.CreateIndex, JobModifyIndex: job.JobModifyIndex, Status: structs.DeploymentStatusRunning,
		TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 1, DesiredCanaries: 1}}}
	alloc := &structs.Allocation{ID: uuid.NewString(), Namespace: "default", JobID: "web", Job: job,
		TaskGroup: "web", Name: "web.web[0]", NodeID: node.ID, DeploymentID: dep.ID,
		DeploymentStatus: &structs.AllocDeploymentStatus{Canary: true},
		DesiredStatus:    structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
		AllocatedResources: &structs.AllocatedResources{Tasks: map[string]*structs.AllocatedTaskResources{
			"t": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64}},
		}}}
	pending, err := s.planQueue.Enqueue(&structs.Plan{Priority: 50, Job: job, Deployment: dep,
		NodeAllocation: map[string][]*structs.Allocation{node.ID: {alloc}}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := pending.Wait(); err != nil || len(res.NodeAllocation[node.ID]) != 1 {
		t.Fatalf("placement: %+v, %v", res, err)
	}

	at := time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC)
	healthy := true
	for i := 0; i < 3; i++ {
		up := &structs.Allocation{ID: alloc.ID, NodeID: node.ID, ClientStatus: structs.AllocClientStatusRunning,
			DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: at}}
		var r structs.GenericResponse
		if err := s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{up}}, &r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.State().AllocByID(nil, alloc.ID)
	if err != nil {
		t.Fatal(err)
	}
	ds := got.DeploymentStatus
	if ds == nil || ds.Healthy == nil || !*ds.Healthy || !ds.Canary || !ds.Timestamp.Equal(at) {
		t.Fatalf("stored health %+v, want healthy canary at %s", ds, at)
	}
	d, err := s.State().DeploymentByID(nil, dep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st := d.TaskGroups["web"]; st.HealthyAllocs != 1 || st.UnhealthyAllocs != 0 || st.PlacedAllocs != 1 {
		t.Fatalf("deployment group %+v: want 1 placed, 1 healthy", st)
	}
}
