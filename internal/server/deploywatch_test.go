package server

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/drover-project/drover/internal/server/deploywatch"
	"github.com/drover-project/drover/internal/structs"
)

// These tests drive the deployment watcher through a real server: the
// deployments and allocations a scheduler would write go through Raft as a
// plan's results, clients' health as client alloc updates, and the
// watcher's own writes through the deployment Raft entries. Only the
// sysbatch scheduler runs, so the evaluations the watcher creates wait in
// the broker and nothing but the watcher changes the deployment.

func watcherServer(t *testing.T) *Server {
	return testServer(t, func(c *Config) { c.EnabledSchedulers = []string{structs.JobTypeSysBatch} })
}

// stableJob registers job web (version 0) and marks it stable, then
// registers version 1 with a different meta; it returns version 1.
func stableThenNewVersion(t *testing.T, s *Server) *structs.Job {
	t.Helper()
	register(t, s, testJob("web", 2))
	var sr structs.JobStabilityResponse
	if err := s.RPC("Job.Stable", &structs.JobStabilityRequest{JobID: "web", JobVersion: 0, Stable: true,
		WriteRequest: structs.WriteRequest{Namespace: "default"}}, &sr); err != nil {
		t.Fatal(err)
	}
	v1 := testJob("web", 2)
	v1.Meta = map[string]string{"release": "2"}
	register(t, s, v1)
	job, err := s.State().JobByID(nil, "default", "web")
	if err != nil || job.Version != 1 {
		t.Fatalf("job version %v, err %v", job, err)
	}
	return job
}

// writeDeployment commits a deployment of job's current version with
// allocations (canaries when canary), as a scheduler's plan would.
func writeDeployment(t *testing.T, s *Server, jobID string, st *structs.DeploymentState, canary bool, allocIDs ...string) *structs.Deployment {
	t.Helper()
	job, err := s.State().JobByID(nil, "default", jobID)
	if err != nil || job == nil {
		t.Fatalf("job %s: %v", jobID, err)
	}
	now := time.Now()
	d := &structs.Deployment{ID: uuid.NewString(), Namespace: "default", JobID: job.ID, JobVersion: job.Version,
		JobModifyIndex: job.JobModifyIndex, JobCreateIndex: job.CreateIndex, Status: structs.DeploymentStatusRunning,
		StatusDescription: "Deployment is running", TaskGroups: map[string]*structs.DeploymentState{"web": st},
		EvalPriority: job.Priority, CreateTime: now.UnixNano(), ModifyTime: now.UnixNano()}
	var allocs []*structs.Allocation
	for i, id := range allocIDs {
		a := &structs.Allocation{ID: id, Namespace: "default", EvalID: uuid.NewString(), Name: structs.AllocName(job.ID, "web", uint(i)),
			NodeID: "node-1", JobID: job.ID, Job: job, TaskGroup: "web", DeploymentID: d.ID,
			DesiredStatus: structs.AllocDesiredStatusRun, ClientStatus: structs.AllocClientStatusPending,
			CreateTime: now.UnixNano(), ModifyTime: now.UnixNano()}
		if canary {
			a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
		}
		allocs = append(allocs, a)
	}
	if _, _, err := s.raftApply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: job, Deployment: d, Alloc: allocs, UpdatedAt: now.UnixNano()}); err != nil {
		t.Fatal(err)
	}
	return d
}

// setHealth reports allocations' health as their client would.
func setHealth(t *testing.T, s *Server, healthy bool, ids ...string) {
	t.Helper()
	var upd []*structs.Allocation
	for _, id := range ids {
		h := healthy
		upd = append(upd, &structs.Allocation{ID: id, NodeID: "node-1", ClientStatus: structs.AllocClientStatusRunning,
			DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: &h, Timestamp: time.Now()}, ModifyTime: time.Now().UnixNano()})
	}
	if _, _, err := s.raftApply(structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{Alloc: upd}); err != nil {
		t.Fatal(err)
	}
}

// watcherEvals returns the job's evaluations the watcher created for d.
func watcherEvals(t *testing.T, s *Server, jobID, deploymentID string) []*structs.Evaluation {
	t.Helper()
	evals, err := s.State().EvalsByJob(nil, "default", jobID)
	if err != nil {
		t.Fatal(err)
	}
	var out []*structs.Evaluation
	for _, e := range evals {
		if e.TriggeredBy == structs.EvalTriggerDeploymentWatcher && e.DeploymentID == deploymentID {
			out = append(out, e)
		}
	}
	return out
}

func TestDeploymentWatcher_ProgressDeadlineFails(t *testing.T) {
	s := watcherServer(t)
	register(t, s, testJob("web", 2))
	d := writeDeployment(t, s, "web", &structs.DeploymentState{DesiredTotal: 2, ProgressDeadline: 500 * time.Millisecond}, false, uuid.NewString(), uuid.NewString())
	if by := deploymentOf(t, s, d.ID).TaskGroups["web"].RequireProgressBy; by.IsZero() {
		t.Fatal("placement did not start the progress deadline")
	}
	waitFor(t, 10*time.Second, "deployment failed", func() bool {
		return deploymentOf(t, s, d.ID).Status == structs.DeploymentStatusFailed
	})
	if got := deploymentOf(t, s, d.ID).StatusDescription; got != deploywatch.DescProgressDeadline {
		t.Fatalf("description %q, want %q", got, deploywatch.DescProgressDeadline)
	}
	if evals := watcherEvals(t, s, "web", d.ID); len(evals) != 1 || evals[0].Status != structs.EvalStatusPending {
		t.Fatalf("watcher evals %+v, want one pending", evals)
	}
}

func TestDeploymentWatcher_HealthyAllocCreatesEval(t *testing.T) {
	s := watcherServer(t)
	register(t, s, testJob("web", 2))
	a1, a2 := uuid.NewString(), uuid.NewString()
	d := writeDeployment(t, s, "web", &structs.DeploymentState{DesiredTotal: 4, ProgressDeadline: time.Hour}, false, a1, a2)
	// Both healths in one client update: two separate writes had to land
	// within the watcher's 1 s eval batch window, which a loaded race run
	// can exceed (the window itself is tested on a fake clock in
	// deploywatch's TestWatcher_HealthyAllocsMakeOneEvalPerBatch).
	setHealth(t, s, true, a1, a2)
	waitFor(t, 10*time.Second, "the watcher's eval", func() bool { return len(watcherEvals(t, s, "web", d.ID)) > 0 })
	// Healths reported together: one eval; the deployment still runs, its
	// deadline moved by the health.
	if evals := watcherEvals(t, s, "web", d.ID); len(evals) != 1 {
		t.Fatalf("%d watcher evals, want 1 for healths reported together", len(evals))
	}
	if got := deploymentOf(t, s, d.ID); got.Status != structs.DeploymentStatusRunning || got.TaskGroups["web"].HealthyAllocs != 2 {
		t.Fatalf("deployment %s healthy %d", got.Status, got.TaskGroups["web"].HealthyAllocs)
	}
}

func TestDeploymentWatcher_UnhealthyAllocReplacedWithinDeadline(t *testing.T) {
	s := watcherServer(t)
	register(t, s, testJob("web", 2))
	a1 := uuid.NewString()
	d := writeDeployment(t, s, "web", &structs.DeploymentState{DesiredTotal: 2, ProgressDeadline: time.Hour}, false, a1, uuid.NewString())
	setHealth(t, s, false, a1)
	waitFor(t, 10*time.Second, "the replacement allowed", func() bool {
		a, _ := s.State().AllocByID(nil, a1)
		return a != nil && a.DesiredTransition.Reschedule != nil && *a.DesiredTransition.Reschedule
	})
	if got := deploymentOf(t, s, d.ID); got.Status != structs.DeploymentStatusRunning {
		t.Fatalf("deployment %s (%s), want running", got.Status, got.StatusDescription)
	}
	if evals := watcherEvals(t, s, "web", d.ID); len(evals) != 1 {
		t.Fatalf("%d watcher evals, want the replacement's 1", len(evals))
	}
}

func TestDeploymentWatcher_AutoRevertRegistersLastStable(t *testing.T) {
	s := watcherServer(t)
	stableThenNewVersion(t, s)
	a1 := uuid.NewString()
	// No progress deadline: the first unhealthy allocation fails it.
	d := writeDeployment(t, s, "web", &structs.DeploymentState{DesiredTotal: 2, AutoRevert: true}, false, a1, uuid.NewString())
	setHealth(t, s, false, a1)
	waitFor(t, 10*time.Second, "deployment failed", func() bool {
		return deploymentOf(t, s, d.ID).Status == structs.DeploymentStatusFailed
	})
	if got := deploymentOf(t, s, d.ID).StatusDescription; !strings.HasPrefix(got, deploywatch.DescFailedAllocs) || !strings.Contains(got, "job version 0") {
		t.Fatalf("description %q, want the unhealthy failure reverting to version 0", got)
	}
	job, _ := s.State().JobByID(nil, "default", "web")
	v0, _ := s.State().JobByIDAndVersion(nil, "default", "web", 0)
	if job.Version != 2 || job.SpecChanged(v0) {
		t.Fatalf("job now version %d meta %v, want version 2 with version 0's spec", job.Version, job.Meta)
	}
	if evals := watcherEvals(t, s, "web", d.ID); len(evals) != 1 {
		t.Fatalf("%d watcher evals, want 1 with the failure", len(evals))
	}
}

func TestDeploymentWatcher_AutoPromote(t *testing.T) {
	s := watcherServer(t)
	register(t, s, testJob("web", 3))
	c1, c2 := uuid.NewString(), uuid.NewString()
	d := writeDeployment(t, s, "web", &structs.DeploymentState{DesiredTotal: 3, DesiredCanaries: 2, AutoPromote: true,
		PlacedCanaries: []string{c1, c2}, ProgressDeadline: time.Hour}, true, c1, c2)
	setHealth(t, s, true, c1)
	// One healthy canary of two: the eval arrives, the promotion must not.
	waitFor(t, 10*time.Second, "the eval for the healthy canary", func() bool { return len(watcherEvals(t, s, "web", d.ID)) == 1 })
	if deploymentOf(t, s, d.ID).TaskGroups["web"].Promoted {
		t.Fatal("promoted with one canary of two healthy")
	}
	setHealth(t, s, true, c2)
	waitFor(t, 10*time.Second, "promotion", func() bool { return deploymentOf(t, s, d.ID).TaskGroups["web"].Promoted })
	if got := deploymentOf(t, s, d.ID); got.Status != structs.DeploymentStatusRunning {
		t.Fatalf("deployment %s after promotion", got.Status)
	}
}

// The watcher stopped and started again on the same state (what revoking
// and establishing leadership does to it) reaches the outcome it would
// have reached: the progress deadline armed before the stop still fails the
// deployment, once, with the rollback.
func TestDeploymentWatcher_RestartResumes(t *testing.T) {
	s := watcherServer(t)
	stableThenNewVersion(t, s)
	d := writeDeployment(t, s, "web", &structs.DeploymentState{DesiredTotal: 2, AutoRevert: true, ProgressDeadline: 1500 * time.Millisecond},
		false, uuid.NewString(), uuid.NewString())
	waitFor(t, 5*time.Second, "deployment watched", func() bool { return s.deployWatcher.Watched() == 1 })
	s.deployWatcher.SetEnabled(false)
	if s.deployWatcher.Watched() != 0 {
		t.Fatal("deployments still watched after disabling")
	}
	s.deployWatcher.SetEnabled(true)
	waitFor(t, 10*time.Second, "deployment failed", func() bool {
		return deploymentOf(t, s, d.ID).Status == structs.DeploymentStatusFailed
	})
	if got := deploymentOf(t, s, d.ID).StatusDescription; !strings.HasPrefix(got, deploywatch.DescProgressDeadline) || !strings.Contains(got, "job version 0") {
		t.Fatalf("description %q", got)
	}
	job, _ := s.State().JobByID(nil, "default", "web")
	if job.Version != 2 {
		t.Fatalf("job version %d, want 2 (one revert)", job.Version)
	}
	if evals := watcherEvals(t, s, "web", d.ID); len(evals) != 1 {
		t.Fatalf("%d watcher evals, want 1", len(evals))
	}
}

// A leader change in the middle of a deployment: the old leader's watcher
// saw the first canary healthy (and asked for an eval); after the change the
// new leader's watcher, rebuilt from state, sees the second and promotes,
// once, as the old leader would have; the old leader's watcher has stopped.
func TestDeploymentWatcher_LeaderChangeResumes(t *testing.T) {
	servers := testClusterWith(t, 3, func(_ int, c *Config) { c.EnabledSchedulers = []string{structs.JobTypeSysBatch} })
	old := waitLeader(t, servers, 10*time.Second, "first leader")
	register(t, old, testJob("web", 3))
	c1, c2 := uuid.NewString(), uuid.NewString()
	d := writeDeployment(t, old, "web", &structs.DeploymentState{DesiredTotal: 3, DesiredCanaries: 2, AutoPromote: true,
		PlacedCanaries: []string{c1, c2}, ProgressDeadline: time.Hour}, true, c1, c2)
	setHealth(t, old, true, c1)
	waitFor(t, 10*time.Second, "the old leader's eval", func() bool { return len(watcherEvals(t, old, "web", d.ID)) == 1 })

	if err := old.raft.LeadershipTransfer().Error(); err != nil {
		t.Fatal(err)
	}
	var leader *Server
	waitFor(t, 10*time.Second, "a new leader", func() bool {
		leader = currentLeader(servers)
		return leader != nil && leader != old && leader.IsLeader()
	})
	waitFor(t, 10*time.Second, "the old leader's watcher stopped", func() bool { return !old.deployWatcher.Enabled() })
	waitFor(t, 10*time.Second, "the new leader watching the deployment", func() bool { return leader.deployWatcher.Watched() == 1 })
	if deploymentOf(t, leader, d.ID).TaskGroups["web"].Promoted {
		t.Fatal("promoted before the second canary was healthy")
	}
	setHealth(t, leader, true, c2)
	waitFor(t, 10*time.Second, "promotion by the new leader", func() bool {
		return deploymentOf(t, leader, d.ID).TaskGroups["web"].Promoted
	})
	// The old leader's eval still stands for the first health; the new one
	// adds the promotion's.
	if evals := watcherEvals(t, leader, "web", d.ID); len(evals) != 2 {
		t.Fatalf("%d watcher evals, want 2 (first canary's, promotion's)", len(evals))
	}
	for _, s := range servers {
		if s != leader && s.deployWatcher.Enabled() {
			t.Fatalf("watcher runs on follower %s", s.config.NodeName)
		}
	}
}

// A deployment paused past its progress deadline and then resumed gets
// the whole deadline again from the resume, as Nomad does: resumed, it was
// failed at once ("Failed due to progress deadline") for time spent paused.
func TestDeploymentWatcher_ResumeRestartsProgressDeadline(t *testing.T) {
	s := watcherServer(t)
	register(t, s, testJob("web", 2))
	const pd = 3 * time.Second
	d := writeDeployment(t, s, "web", &structs.DeploymentState{DesiredTotal: 2, ProgressDeadline: pd}, false, uuid.NewString(), uuid.NewString())
	var resp structs.DeploymentUpdateResponse
	if err := s.RPC("Deployment.Pause", &structs.DeploymentPauseRequest{DeploymentID: d.ID, Pause: true,
		WriteRequest: structs.WriteRequest{Namespace: "default"}}, &resp); err != nil {
		t.Fatal(err)
	}
	by := deploymentOf(t, s, d.ID).TaskGroups["web"].RequireProgressBy
	if by.IsZero() {
		t.Fatal("placement did not start the progress deadline")
	}
	waitFor(t, 2*pd, "the progress deadline to pass while paused", func() bool { return time.Now().After(by.Add(200 * time.Millisecond)) })
	if got := deploymentOf(t, s, d.ID).Status; got != structs.DeploymentStatusPaused {
		t.Fatalf("paused deployment became %q", got)
	}

	resumed := time.Now()
	if err := s.RPC("Deployment.Pause", &structs.DeploymentPauseRequest{DeploymentID: d.ID, Pause: false,
		WriteRequest: structs.WriteRequest{Namespace: "default"}}, &resp); err != nil {
		t.Fatal(err)
	}
	got := deploymentOf(t, s, d.ID)
	if newBy := got.TaskGroups["web"].RequireProgressBy; newBy.Before(resumed.Add(pd - 500*time.Millisecond)) {
		t.Fatalf("resumed with progress deadline %v, want about %v (resume + %v)", newBy, resumed.Add(pd), pd)
	}
	if got.Status != structs.DeploymentStatusRunning {
		t.Fatalf("resumed deployment is %q (%s)", got.Status, got.StatusDescription)
	}
}
