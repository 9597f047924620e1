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

// An in-place update (an existing allocation in NodeAllocation) keeps the
// client's status and task states, takes the new job, and when it joins a
// new deployment counts as placed there with its health starting over.
// Canaries are recorded in the deployment as they are placed.
func TestUpsertPlanResultsInPlaceIntoDeployment(t *testing.T) {
	s := testStore(t)
	job := storedJob(t, s, 10, mockJob("web"))
	a := mockAlloc("a1", "n1", job)
	a.DeploymentID = "d0"
	must(t, s.UpsertAllocs(12, []*structs.Allocation{a}))
	must(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusRunning,
		TaskStates:       map[string]*structs.TaskState{"web": {State: "running"}},
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: boolPtr(true)}}}))

	v2 := job.Copy()
	v2.Meta = map[string]string{"v": "2"}
	v2 = storedJob(t, s, 14, v2)
	if v2.Version == job.Version {
		t.Fatal("no new version")
	}
	cur, _ := s.AllocByID(nil, "a1")
	upd := cur.CopySkipJob()
	upd.Job = nil // the plan's job
	upd.DeploymentID, upd.DeploymentStatus = "d1", nil
	canary := mockAlloc("c1", "n1", v2)
	canary.Job = nil
	canary.DeploymentID = "d1"
	canary.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	must(t, s.UpsertPlanResults(20, &structs.ApplyPlanResultsRequest{Job: v2, Alloc: []*structs.Allocation{upd, canary},
		Deployment: &structs.Deployment{ID: "d1", Namespace: "default", JobID: "web", JobVersion: v2.Version,
			Status: structs.DeploymentStatusRunning, TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 1, DesiredCanaries: 1}}}}))

	got, _ := s.AllocByID(nil, "a1")
	if got.Job.Version != v2.Version || got.ClientStatus != structs.AllocClientStatusRunning || got.TaskStates["web"] == nil ||
		got.DeploymentID != "d1" || got.DeploymentStatus != nil || got.CreateIndex != 12 {
		t.Fatalf("in-place update: version %d status %s deployment %s %+v create %d", got.Job.Version, got.ClientStatus,
			got.DeploymentID, got.DeploymentStatus, got.CreateIndex)
	}
	d, _ := s.DeploymentByID(nil, "d1")
	if st := d.TaskGroups["web"]; st.PlacedAllocs != 2 || len(st.PlacedCanaries) != 1 || st.PlacedCanaries[0] != "c1" {
		t.Fatalf("deployment state %+v", st)
	}
	// A later plan rewriting the same allocation in the same deployment
	// keeps the health the client reported.
	must(t, s.UpdateAllocsFromClient(21, []*structs.Allocation{{ID: "a1", ClientStatus: structs.AllocClientStatusRunning,
		DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: boolPtr(true)}}}))
	again, _ := s.AllocByID(nil, "a1")
	again = again.CopySkipJob()
	again.FollowupEvalID = "f"
	again.DeploymentStatus = nil
	must(t, s.UpsertPlanResults(22, &structs.ApplyPlanResultsRequest{Job: v2, Alloc: []*structs.Allocation{again}}))
	got, _ = s.AllocByID(nil, "a1")
	if got.DeploymentStatus == nil || got.DeploymentStatus.Healthy == nil || !*got.DeploymentStatus.Healthy {
		t.Fatalf("health lost: %+v", got.DeploymentStatus)
	}
	if d, _ := s.DeploymentByID(nil, "d1"); d.TaskGroups["web"].PlacedAllocs != 2 || d.TaskGroups["web"].HealthyAllocs != 1 {
		t.Fatalf("recounted: %+v", d.TaskGroups["web"])
	}
}
