package state

import (
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

func TestUpsertPlanResults(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	must(t, s.UpsertEvals(11, []*structs.Evaluation{mockEval("e1", job, structs.EvalStatusPending)}))
	old := mockAlloc("old", "n1", job)
	victim := mockAlloc("victim", "n2", job)
	must(t, s.UpsertAllocs(12, []*structs.Allocation{old, victim}))
	must(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{
		{ID: "old", ClientStatus: structs.AllocClientStatusRunning},
		{ID: "victim", ClientStatus: structs.AllocClientStatusRunning},
	}))

	placed := mockAlloc("new", "n1", job)
	placed.Job = nil
	placed.DeploymentID = "d1"
	placed.PreviousAllocation = "old"
	req := &structs.ApplyPlanResultsRequest{
		Job:   job,
		Alloc: []*structs.Allocation{placed},
		AllocsStopped: []*structs.Allocation{{
			ID: "old", DesiredStatus: structs.AllocDesiredStatusStop, DesiredDescription: "alloc is being updated",
			FollowupEvalID: "f1", ModifyTime: 42,
		}},
		AllocsPreempted: []*structs.Allocation{{ID: "victim", PreemptedByAllocation: "new", DesiredDescription: "preempted"}},
		Deployment: &structs.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobCreateIndex: job.CreateIndex,
			Status:     structs.DeploymentStatusRunning,
			TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 2, ProgressDeadline: time.Minute}}},
		EvalID:          "e1",
		PreemptionEvals: []*structs.Evaluation{mockEval("pe1", job, structs.EvalStatusPending)},
	}
	must(t, s.UpsertPlanResults(20, req))

	o, _ := s.AllocByID(nil, "old")
	if o.DesiredStatus != structs.AllocDesiredStatusStop || o.FollowupEvalID != "f1" || o.ModifyTime != 42 ||
		o.ClientStatus != structs.AllocClientStatusRunning || o.Job == nil || o.AllocModifyIndex != 20 || o.NextAllocation != "new" {
		t.Fatalf("stopped alloc merge: %+v", o)
	}
	v, _ := s.AllocByID(nil, "victim")
	if v.DesiredStatus != structs.AllocDesiredStatusEvict || v.PreemptedByAllocation != "new" || v.Job == nil {
		t.Fatalf("preempted alloc merge: %+v", v)
	}
	n, _ := s.AllocByID(nil, "new")
	if n.Job == nil || n.Job.ID != "web" || n.CreateIndex != 20 {
		t.Fatalf("placement: %+v", n)
	}
	d, _ := s.DeploymentByID(nil, "d1")
	if d == nil || d.TaskGroups["web"].PlacedAllocs != 1 || d.CreateIndex != 20 {
		t.Fatalf("deployment: %+v", d)
	}
	if e, _ := s.EvalByID(nil, "e1"); e.ModifyIndex != 20 || e.CreateIndex != 11 {
		t.Fatalf("plan eval indexes: %+v", e)
	}
	if e, _ := s.EvalByID(nil, "pe1"); e == nil || e.CreateIndex != 20 {
		t.Fatal("preemption eval not inserted")
	}
	if got := tgSummary(t, s, "web", "web"); got.Running != 2 || got.Starting != 1 {
		t.Fatalf("summary: %+v", got)
	}

	// Deployment updates and alloc health feed the deployment counters.
	must(t, s.UpdateAllocsFromClient(21, []*structs.Allocation{{ID: "new", ClientStatus: structs.AllocClientStatusRunning,
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: boolPtr(true), Timestamp: time.Unix(100, 0)}}}))
	d, _ = s.DeploymentByID(nil, "d1")
	if st := d.TaskGroups["web"]; st.HealthyAllocs != 1 || !st.RequireProgressBy.Equal(time.Unix(100, 0).Add(time.Minute)) {
		t.Fatalf("deployment health: %+v", st)
	}
	must(t, s.UpsertPlanResults(22, &structs.ApplyPlanResultsRequest{
		DeploymentUpdates: []*structs.DeploymentStatusUpdate{{DeploymentID: "d1", Status: structs.DeploymentStatusSuccessful, StatusDescription: "done"}},
	}))
	d, _ = s.DeploymentByID(nil, "d1")
	if d.Status != structs.DeploymentStatusSuccessful || d.StatusDescription != "done" || d.ModifyIndex != 22 {
		t.Fatalf("deployment update: %+v", d)
	}
}

func TestDeploymentsByJob(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	must(t, s.UpsertDeployment(11, &structs.Deployment{ID: "d-old", Namespace: "default", JobID: "web", JobCreateIndex: 1, Status: structs.DeploymentStatusSuccessful}))
	must(t, s.UpsertDeployment(12, &structs.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobCreateIndex: job.CreateIndex, Status: structs.DeploymentStatusSuccessful}))
	must(t, s.UpsertDeployment(13, &structs.Deployment{ID: "d2", Namespace: "default", JobID: "web", JobCreateIndex: job.CreateIndex, Status: structs.DeploymentStatusRunning}))
	cur, _ := s.DeploymentsByJobID(nil, "default", "web", false)
	all, _ := s.DeploymentsByJobID(nil, "default", "web", true)
	if len(cur) != 2 || len(all) != 3 {
		t.Fatalf("current=%d all=%d", len(cur), len(all))
	}
	latest, _ := s.LatestDeploymentByJobID(nil, "default", "web")
	if latest == nil || latest.ID != "d2" {
		t.Fatalf("latest = %+v", latest)
	}
	it, err := s.DeploymentsByIDPrefix(nil, "default", "d-")
	if n := iterCount(t, it, err); n != 1 {
		t.Fatalf("prefix = %d", n)
	}
	it, err = s.Deployments(nil)
	if n := iterCount(t, it, err); n != 3 {
		t.Fatalf("all = %d", n)
	}
}

// A plan's stops and placements move the job summary once, by all of them:
// a lost allocation leaves Running for Lost and each placement leaves Queued
// for Starting.
func TestUpsertPlanResults_SummaryOfAllAllocs(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	must(t, s.UpsertAllocs(11, []*structs.Allocation{mockAlloc("old", "n1", job)}))
	must(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{{ID: "old", ClientStatus: structs.AllocClientStatusRunning}}))
	ev := mockEval("e1", job, structs.EvalStatusComplete)
	ev.QueuedAllocations = map[string]int{"web": 2}
	must(t, s.UpsertEvals(13, []*structs.Evaluation{ev}))
	if got := tgSummary(t, s, "web", "web"); got != (structs.TaskGroupSummary{Queued: 2, Running: 1}) {
		t.Fatalf("before the plan: %+v", got)
	}
	must(t, s.UpsertPlanResults(20, &structs.ApplyPlanResultsRequest{
		Job:           job,
		AllocsStopped: []*structs.Allocation{{ID: "old", ClientStatus: structs.AllocClientStatusLost}},
		Alloc:         []*structs.Allocation{mockAlloc("new1", "n2", job), mockAlloc("new2", "n3", job)},
	}))
	if got := tgSummary(t, s, "web", "web"); got != (structs.TaskGroupSummary{Starting: 2, Lost: 1}) {
		t.Fatalf("after the plan: %+v", got)
	}
	sum, _ := s.JobSummaryByID(nil, structs.DefaultNamespace, "web")
	if sum.ModifyIndex != 20 {
		t.Fatalf("summary ModifyIndex = %d, want 20", sum.ModifyIndex)
	}
}
