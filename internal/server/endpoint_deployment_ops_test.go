package server

import (
	"strings"
	"testing"
	"time"

	"github.com/drover-project/drover/internal/structs"
)

// seedDeployment places job (count allocations on a real node), then
// writes, as a plan would, a deployment of its current version that the
// allocations belong to; the first canaries of them are its canaries.
func seedDeployment(t *testing.T, s *Server, job *structs.Job, canaries int, mut func(*structs.Deployment)) (*structs.Deployment, []*structs.Allocation) {
	t.Helper()
	evalDone(t, s, register(t, s, job).EvalID)
	waitFor(t, 5*time.Second, "placements", func() bool { return len(liveAllocs(t, s, job.ID)) == job.TaskGroups[0].Count })
	stored, err := s.State().JobByID(nil, "default", job.ID)
	if err != nil {
		t.Fatal(err)
	}
	dep := &structs.Deployment{ID: newID(), Namespace: "default", JobID: job.ID, JobVersion: stored.Version,
		JobModifyIndex: stored.JobModifyIndex, JobCreateIndex: stored.CreateIndex, Status: structs.DeploymentStatusRunning,
		StatusDescription: deployDescRunning,
		TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: job.TaskGroups[0].Count, DesiredCanaries: canaries,
			ProgressDeadline: 10 * time.Minute}}}
	if mut != nil {
		mut(dep)
	}
	var allocs []*structs.Allocation
	for i, a := range liveAllocs(t, s, job.ID) {
		c := *a
		c.DeploymentID = dep.ID
		c.DeploymentStatus = nil
		if i < canaries {
			c.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
			dep.TaskGroups["web"].PlacedCanaries = append(dep.TaskGroups["web"].PlacedCanaries, c.ID)
		}
		allocs = append(allocs, &c)
	}
	if _, _, err := s.raftApply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: stored, Deployment: dep, Alloc: allocs}); err != nil {
		t.Fatal(err)
	}
	return dep, allocs
}

func deploymentOf(t *testing.T, s *Server, id string) *structs.Deployment {
	t.Helper()
	d, err := s.State().DeploymentByID(nil, id)
	if err != nil || d == nil {
		t.Fatalf("deployment %s: %v %v", id, d, err)
	}
	return d
}

// wantCoded asserts a coded error with the status and a message part.
func wantCoded(t *testing.T, err error, code int, part string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %d %q", code, part)
	}
	if c, msg := structs.ErrorCode(err); c != code || !strings.Contains(msg, part) {
		t.Fatalf("error %d %q, want %d containing %q", c, msg, code, part)
	}
}

// wantWatcherEval asserts the reply's eval exists, is the deployment's and
// was triggered by the deployment watcher.
func wantWatcherEval(t *testing.T, s *Server, resp *structs.DeploymentUpdateResponse, depID string) {
	t.Helper()
	e, err := s.State().EvalByID(nil, resp.EvalID)
	if err != nil || e == nil {
		t.Fatalf("reply eval %q not stored: %v", resp.EvalID, err)
	}
	if e.TriggeredBy != structs.EvalTriggerDeploymentWatcher || e.DeploymentID != depID || resp.EvalCreateIndex == 0 || resp.DeploymentModifyIndex == 0 {
		t.Fatalf("eval %+v, reply %+v", e, resp)
	}
}

func TestDeploymentPromote(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	dep, allocs := seedDeployment(t, s, testJob("pr", 2), 1, nil)
	canary := allocs[0].ID
	var resp structs.DeploymentUpdateResponse

	err := s.RPC("Deployment.Promote", &structs.DeploymentPromoteRequest{DeploymentID: dep.ID, All: true}, &resp)
	wantCoded(t, err, 400, `Task group "web" has 0/1 healthy allocations`)
	err = s.RPC("Deployment.Promote", &structs.DeploymentPromoteRequest{DeploymentID: dep.ID, Groups: []string{"api"}}, &resp)
	wantCoded(t, err, 400, `no task group "api" (Groups)`)
	err = s.RPC("Deployment.Promote", &structs.DeploymentPromoteRequest{DeploymentID: dep.ID}, &resp)
	wantCoded(t, err, 400, "(All)")
	err = s.RPC("Deployment.Promote", &structs.DeploymentPromoteRequest{DeploymentID: "nope", All: true}, &resp)
	wantCoded(t, err, 404, `deployment "nope" not found`)

	if err := s.RPC("Deployment.SetAllocHealth", &structs.DeploymentAllocHealthRequest{DeploymentID: dep.ID,
		HealthyAllocationIDs: []string{canary}}, &resp); err != nil {
		t.Fatal(err)
	}
	wantWatcherEval(t, s, &resp, dep.ID)
	resp = structs.DeploymentUpdateResponse{}
	if err := s.RPC("Deployment.Promote", &structs.DeploymentPromoteRequest{DeploymentID: dep.ID, Groups: []string{"web"}}, &resp); err != nil {
		t.Fatal(err)
	}
	wantWatcherEval(t, s, &resp, dep.ID)
	d := deploymentOf(t, s, dep.ID)
	if !d.TaskGroups["web"].Promoted || d.Status != structs.DeploymentStatusRunning {
		t.Fatalf("after promote: %s %+v", d.Status, d.TaskGroups["web"])
	}
	a, _ := s.State().AllocByID(nil, canary)
	if a.DeploymentStatus == nil || a.DeploymentStatus.Canary || a.DeploymentStatus.Healthy == nil || !*a.DeploymentStatus.Healthy {
		t.Fatalf("promoted canary: %+v", a.DeploymentStatus)
	}
}

func TestDeploymentPauseResumeFailAndTerminal(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	dep, _ := seedDeployment(t, s, testJob("pa", 1), 0, nil)
	var resp structs.DeploymentUpdateResponse

	if err := s.RPC("Deployment.Pause", &structs.DeploymentPauseRequest{DeploymentID: dep.ID, Pause: true}, &resp); err != nil {
		t.Fatal(err)
	}
	if d := deploymentOf(t, s, dep.ID); d.Status != structs.DeploymentStatusPaused || d.StatusDescription != deployDescPaused || resp.EvalID != "" {
		t.Fatalf("paused: %s %q eval %q", d.Status, d.StatusDescription, resp.EvalID)
	}
	resp = structs.DeploymentUpdateResponse{}
	if err := s.RPC("Deployment.Pause", &structs.DeploymentPauseRequest{DeploymentID: dep.ID, Pause: false}, &resp); err != nil {
		t.Fatal(err)
	}
	wantWatcherEval(t, s, &resp, dep.ID)
	if d := deploymentOf(t, s, dep.ID); d.Status != structs.DeploymentStatusRunning || d.StatusDescription != deployDescRunning {
		t.Fatalf("resumed: %s %q", d.Status, d.StatusDescription)
	}

	err := s.RPC("Deployment.Unblock", &structs.DeploymentUnblockRequest{DeploymentID: dep.ID}, &resp)
	wantCoded(t, err, 400, "is not multiregion")
	err = s.RPC("Deployment.Run", &structs.DeploymentRunRequest{DeploymentID: dep.ID}, &resp)
	wantCoded(t, err, 400, "is not multiregion")
	err = s.RPC("Deployment.Cancel", &structs.DeploymentCancelRequest{DeploymentID: dep.ID}, &resp)
	wantCoded(t, err, 400, "is not multiregion")

	resp = structs.DeploymentUpdateResponse{}
	if err := s.RPC("Deployment.Fail", &structs.DeploymentFailRequest{DeploymentID: dep.ID}, &resp); err != nil {
		t.Fatal(err)
	}
	wantWatcherEval(t, s, &resp, dep.ID)
	if d := deploymentOf(t, s, dep.ID); d.Status != structs.DeploymentStatusFailed || d.StatusDescription != deployDescFailedByUser || resp.RevertedJobVersion != nil {
		t.Fatalf("failed: %s %q reverted %v", d.Status, d.StatusDescription, resp.RevertedJobVersion)
	}

	wantCoded(t, s.RPC("Deployment.Pause", &structs.DeploymentPauseRequest{DeploymentID: dep.ID, Pause: true}, &resp), 400, "can't pause terminal deployment")
	wantCoded(t, s.RPC("Deployment.Pause", &structs.DeploymentPauseRequest{DeploymentID: dep.ID}, &resp), 400, "can't resume terminal deployment")
	wantCoded(t, s.RPC("Deployment.Fail", &structs.DeploymentFailRequest{DeploymentID: dep.ID}, &resp), 400, "can't fail terminal deployment")
	wantCoded(t, s.RPC("Deployment.Promote", &structs.DeploymentPromoteRequest{DeploymentID: dep.ID, All: true}, &resp), 400, "can't promote terminal deployment")
	wantCoded(t, s.RPC("Deployment.SetAllocHealth", &structs.DeploymentAllocHealthRequest{DeploymentID: dep.ID, HealthyAllocationIDs: []string{"x"}}, &resp),
		400, "terminal deployment")
	wantCoded(t, s.RPC("Deployment.Fail", &structs.DeploymentFailRequest{DeploymentID: "nope"}, &resp), 404, "not found")
	wantCoded(t, s.RPC("Deployment.Fail", &structs.DeploymentFailRequest{}, &resp), 400, "missing deployment ID")
}

// Failing an auto-reverting deployment registers the latest stable
// version again; without one, or when it is the current spec, nothing is
// registered and the description says why.
func TestDeploymentFailRollsBackToStable(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	autoRevert := func(d *structs.Deployment) { d.TaskGroups["web"].AutoRevert = true }

	// No stable version yet.
	dep, _ := seedDeployment(t, s, testJob("rb", 1), 0, autoRevert)
	var resp structs.DeploymentUpdateResponse
	if err := s.RPC("Deployment.Fail", &structs.DeploymentFailRequest{DeploymentID: dep.ID}, &resp); err != nil {
		t.Fatal(err)
	}
	if d := deploymentOf(t, s, dep.ID); d.StatusDescription != deployDescFailedByUser+" - no stable job version to auto revert to" || resp.RevertedJobVersion != nil {
		t.Fatalf("no stable: %q %v", d.StatusDescription, resp.RevertedJobVersion)
	}

	// Version 0 stable; version 1 changes the command and fails.
	var st structs.JobStabilityResponse
	if err := s.RPC("Job.Stable", &structs.JobStabilityRequest{JobID: "rb", JobVersion: 0, Stable: true}, &st); err != nil {
		t.Fatal(err)
	}
	v1 := testJob("rb", 1)
	v1.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []any{"601"}}
	dep, _ = seedDeployment(t, s, v1, 0, autoRevert)
	resp = structs.DeploymentUpdateResponse{}
	if err := s.RPC("Deployment.Fail", &structs.DeploymentFailRequest{DeploymentID: dep.ID}, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.RevertedJobVersion == nil || *resp.RevertedJobVersion != 0 {
		t.Fatalf("RevertedJobVersion = %v, want 0", resp.RevertedJobVersion)
	}
	if d := deploymentOf(t, s, dep.ID); d.StatusDescription != deployDescFailedByUser+" - rolling back to job version 0" {
		t.Fatalf("description %q", d.StatusDescription)
	}
	job, _ := s.State().JobByID(nil, "default", "rb")
	if job.Version != 2 || job.Stable || job.TaskGroups[0].Tasks[0].Config["args"].([]any)[0] != "600" {
		t.Fatalf("after rollback: v%d stable=%v %v", job.Version, job.Stable, job.TaskGroups[0].Tasks[0].Config)
	}
	evalDone(t, s, resp.EvalID)

	// The current version (2, version 0's spec) stable: failing its
	// deployment does not register the same spec again.
	if err := s.RPC("Job.Stable", &structs.JobStabilityRequest{JobID: "rb", JobVersion: 2, Stable: true}, &st); err != nil {
		t.Fatal(err)
	}
	stored, _ := s.State().JobByID(nil, "default", "rb")
	d3 := &structs.Deployment{ID: newID(), Namespace: "default", JobID: "rb", JobVersion: 2, JobCreateIndex: stored.CreateIndex,
		Status: structs.DeploymentStatusRunning, TaskGroups: map[string]*structs.DeploymentState{"web": {DesiredTotal: 1, AutoRevert: true}}}
	if _, _, err := s.raftApply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{Job: stored, Deployment: d3}); err != nil {
		t.Fatal(err)
	}
	resp = structs.DeploymentUpdateResponse{}
	if err := s.RPC("Deployment.Fail", &structs.DeploymentFailRequest{DeploymentID: d3.ID}, &resp); err != nil {
		t.Fatal(err)
	}
	if d := deploymentOf(t, s, d3.ID); !strings.Contains(d.StatusDescription, "not rolling back to stable job version 2 as current job has same specification") ||
		resp.RevertedJobVersion != nil {
		t.Fatalf("same spec: %q %v", d.StatusDescription, resp.RevertedJobVersion)
	}
	if job, _ := s.State().JobByID(nil, "default", "rb"); job.Version != 2 {
		t.Fatalf("same spec registered again: v%d", job.Version)
	}
}

func TestDeploymentSetAllocHealth(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	dep, allocs := seedDeployment(t, s, testJob("ah", 2), 0, nil)
	seedDeployment(t, s, testJob("ah2", 1), 0, nil)
	a0, a1 := allocs[0].ID, allocs[1].ID
	var resp structs.DeploymentUpdateResponse

	wantCoded(t, s.RPC("Deployment.SetAllocHealth", &structs.DeploymentAllocHealthRequest{DeploymentID: dep.ID}, &resp), 400, "HealthyAllocationIDs")
	wantCoded(t, s.RPC("Deployment.SetAllocHealth", &structs.DeploymentAllocHealthRequest{DeploymentID: dep.ID,
		HealthyAllocationIDs: []string{a0}, UnhealthyAllocationIDs: []string{a0}}, &resp), 400, `allocation "`+a0+`" is listed as both healthy`)
	foreign := liveAllocs(t, s, "ah2")[0].ID
	wantCoded(t, s.RPC("Deployment.SetAllocHealth", &structs.DeploymentAllocHealthRequest{DeploymentID: dep.ID,
		HealthyAllocationIDs: []string{a0, foreign}}, &resp), 400, `allocation "`+foreign+`" is not part of deployment`)
	wantCoded(t, s.RPC("Deployment.SetAllocHealth", &structs.DeploymentAllocHealthRequest{DeploymentID: dep.ID,
		UnhealthyAllocationIDs: []string{"missing"}}, &resp), 400, `allocation "missing" is not part of deployment`)
	if a, _ := s.State().AllocByID(nil, a0); a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
		t.Fatal("a refused request set health")
	}

	if err := s.RPC("Deployment.SetAllocHealth", &structs.DeploymentAllocHealthRequest{DeploymentID: dep.ID,
		HealthyAllocationIDs: []string{a0}}, &resp); err != nil {
		t.Fatal(err)
	}
	if g := deploymentOf(t, s, dep.ID).TaskGroups["web"]; g.HealthyAllocs != 1 || g.RequireProgressBy.IsZero() {
		t.Fatalf("after healthy: %+v", g)
	}
	resp = structs.DeploymentUpdateResponse{}
	if err := s.RPC("Deployment.SetAllocHealth", &structs.DeploymentAllocHealthRequest{DeploymentID: dep.ID,
		UnhealthyAllocationIDs: []string{a1}}, &resp); err != nil {
		t.Fatal(err)
	}
	wantWatcherEval(t, s, &resp, dep.ID)
	d := deploymentOf(t, s, dep.ID)
	if d.Status != structs.DeploymentStatusFailed || d.StatusDescription != deployDescFailedAllocations || d.TaskGroups["web"].UnhealthyAllocs != 1 {
		t.Fatalf("after unhealthy: %s %q %+v", d.Status, d.StatusDescription, d.TaskGroups["web"])
	}
}

func TestScaleBlockedDuringActiveDeployment(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	dep, _ := seedDeployment(t, s, testJob("sd", 1), 0, nil)
	n := int64(3)
	var resp structs.JobRegisterResponse
	req := &structs.JobScaleRequest{JobID: "sd", Target: map[string]string{"Group": "web"}, Count: &n}
	wantCoded(t, s.RPC("Job.Scale", req, &resp), 400, "job scaling blocked due to active deployment")
	if job, _ := s.State().JobByID(nil, "default", "sd"); job.TaskGroups[0].Count != 1 {
		t.Fatal("refused scale changed the count")
	}
	// A scaling event without a count is still recorded.
	if err := s.RPC("Job.Scale", &structs.JobScaleRequest{JobID: "sd", Target: map[string]string{"Group": "web"}, Message: "note"}, &resp); err != nil {
		t.Fatal(err)
	}
	var fr structs.DeploymentUpdateResponse
	if err := s.RPC("Deployment.Fail", &structs.DeploymentFailRequest{DeploymentID: dep.ID}, &fr); err != nil {
		t.Fatal(err)
	}
	if err := s.RPC("Job.Scale", req, &resp); err != nil {
		t.Fatalf("scale after the deployment ended: %v", err)
	}
}

// Unblock, run and cancel act on multi-region deployments only.
func TestDeploymentMultiregionActions(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	dep, _ := seedDeployment(t, s, testJob("mr", 1), 0, func(d *structs.Deployment) {
		d.IsMultiregion = true
		d.Status = structs.DeploymentStatusBlocked
	})
	var resp structs.DeploymentUpdateResponse
	wantCoded(t, s.RPC("Deployment.Run", &structs.DeploymentRunRequest{DeploymentID: dep.ID}, &resp), 400, `its status is "blocked", not "pending"`)
	if err := s.RPC("Deployment.Unblock", &structs.DeploymentUnblockRequest{DeploymentID: dep.ID}, &resp); err != nil {
		t.Fatal(err)
	}
	if d := deploymentOf(t, s, dep.ID); d.Status != structs.DeploymentStatusSuccessful || resp.DeploymentModifyIndex == 0 {
		t.Fatalf("after unblock: %s", d.Status)
	}
	if v, _ := s.State().JobByIDAndVersion(nil, "default", "mr", 0); !v.Stable {
		t.Fatal("unblocked (successful) deployment did not mark its version stable")
	}
	wantCoded(t, s.RPC("Deployment.Cancel", &structs.DeploymentCancelRequest{DeploymentID: dep.ID}, &resp), 400, "can't cancel terminal deployment")
}
