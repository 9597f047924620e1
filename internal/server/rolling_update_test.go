package server

import (
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/internal/structs"
)

// Through Raft, the FSM and the plan applier: a service job with an update
// strategy runs under a deployment; registering a larger count keeps every
// allocation (updated in place to the new version, under a new deployment
// that replaces the old version's) and adds the difference.
func TestScaleUpKeepsAllocationsThroughThePlanApplier(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	job := testJob("roll", 3)
	job.TaskGroups[0].Update = api.DefaultUpdateStrategy()
	resp := register(t, s, job)
	evalDone(t, s, resp.EvalID)
	before := liveAllocs(t, s, "roll")
	if len(before) != 3 {
		t.Fatalf("placed %d", len(before))
	}
	first, err := s.State().LatestDeploymentByJobID(nil, "default", "roll")
	if err != nil || first == nil || first.Status != structs.DeploymentStatusRunning || first.TaskGroups["web"].DesiredTotal != 3 ||
		first.TaskGroups["web"].PlacedAllocs != 3 {
		t.Fatalf("first deployment %+v (%v)", first, err)
	}
	for _, a := range before {
		if a.DeploymentID != first.ID {
			t.Fatalf("%s not in the deployment", a.Name)
		}
	}

	job = testJob("roll", 5)
	job.TaskGroups[0].Update = api.DefaultUpdateStrategy()
	resp = register(t, s, job)
	evalDone(t, s, resp.EvalID)
	after := liveAllocs(t, s, "roll")
	if len(after) != 5 {
		t.Fatalf("live %d, want 5", len(after))
	}
	ids := map[string]*structs.Allocation{}
	for _, a := range after {
		ids[a.ID] = a
	}
	cur, _ := s.State().JobByID(nil, "default", "roll")
	for _, b := range before {
		a := ids[b.ID]
		if a == nil {
			t.Fatalf("%s replaced", b.Name)
		}
		if a.Job.Version != cur.Version || a.CreateIndex != b.CreateIndex {
			t.Fatalf("%s: version %d create %d, want %d %d", a.Name, a.Job.Version, a.CreateIndex, cur.Version, b.CreateIndex)
		}
	}
	second, _ := s.State().LatestDeploymentByJobID(nil, "default", "roll")
	if second == nil || second.ID == first.ID || second.JobVersion != cur.Version || second.TaskGroups["web"].DesiredTotal != 5 ||
		second.TaskGroups["web"].PlacedAllocs != 5 {
		t.Fatalf("second deployment %+v", second)
	}
	old, _ := s.State().DeploymentByID(nil, first.ID)
	if old.Status != structs.DeploymentStatusCancelled {
		t.Fatalf("old deployment %s", old.Status)
	}
	waitFor(t, 5*time.Second, "allocs in the new deployment", func() bool {
		for _, a := range liveAllocs(t, s, "roll") {
			if a.DeploymentID != second.ID {
				return false
			}
		}
		return true
	})
}

// A failed service allocation whose reschedule delay (30s by default) has
// not passed gets a follow-up evaluation stored in state with WaitUntil at
// its reschedule time, and the allocation names it: stored, it outlives the
// leader that created it.
func TestRescheduleLaterFollowupIsStored(t *testing.T) {
	s := testServer(t, nil)
	node := testNode(t, s, 4000, 4096)
	resp := register(t, s, testJob("later", 1))
	evalDone(t, s, resp.EvalID)
	a := liveAllocs(t, s, "later")[0]
	failedAt := time.Now()
	up := &structs.Allocation{ID: a.ID, NodeID: node.ID, ClientStatus: structs.AllocClientStatusFailed,
		TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateDead, Failed: true, FinishedAt: failedAt}}}
	var r structs.GenericResponse
	if err := s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{up}}, &r); err != nil {
		t.Fatal(err)
	}
	var followup *structs.Evaluation
	waitFor(t, 10*time.Second, "follow-up eval named on the alloc", func() bool {
		cur, _ := s.State().AllocByID(nil, a.ID)
		if cur == nil || cur.FollowupEvalID == "" {
			return false
		}
		followup, _ = s.State().EvalByID(nil, cur.FollowupEvalID)
		return followup != nil
	})
	if followup.TriggeredBy != structs.EvalTriggerAllocReschedule || followup.Status != structs.EvalStatusPending ||
		followup.WaitUntil.Sub(failedAt) < 29*time.Second || followup.WaitUntil.Sub(failedAt) > 31*time.Second {
		t.Fatalf("follow-up %s %s wait until +%v", followup.TriggeredBy, followup.Status, followup.WaitUntil.Sub(failedAt))
	}
	if cur, _ := s.State().AllocByID(nil, a.ID); cur.DesiredStatus != structs.AllocDesiredStatusRun || cur.NextAllocation != "" {
		t.Fatalf("rescheduled before its time: %+v", cur)
	}
}

// job plan shows what the reconciler will do: a command change under
// max_parallel 1 is one create/destroy update with the rest ignored for
// now, a canary is a canary, a count change is in place.
func TestJobPlanShowsRollingUpdates(t *testing.T) {
	s := testServer(t, nil)
	testNode(t, s, 4000, 4096)
	job := testJob("plan", 3)
	job.TaskGroups[0].Update = api.DefaultUpdateStrategy()
	evalDone(t, s, register(t, s, job).EvalID)

	plan := func(change func(*structs.Job)) *api.DesiredUpdates {
		t.Helper()
		j := testJob("plan", 3)
		j.TaskGroups[0].Update = api.DefaultUpdateStrategy()
		change(j)
		var pr structs.JobPlanResponse
		if err := s.RPC("Job.Plan", &structs.JobPlanRequest{Job: j}, &pr); err != nil {
			t.Fatal(err)
		}
		return pr.Annotations.DesiredTGUpdates["web"]
	}
	cmd := func(j *structs.Job) {
		j.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/sleep", "args": []any{"601"}}
	}
	if d := plan(cmd); d.DestructiveUpdate != 1 || d.Ignore != 2 || d.Place != 0 {
		t.Fatalf("command change: %+v", d)
	}
	if d := plan(func(j *structs.Job) { cmd(j); c := 1; j.TaskGroups[0].Update.Canary = &c }); d.Canary != 1 || d.DestructiveUpdate != 0 || d.Place != 0 {
		t.Fatalf("canary: %+v", d)
	}
	if d := plan(func(j *structs.Job) { j.TaskGroups[0].Count = 5 }); d.InPlaceUpdate != 3 || d.Place != 2 || d.Stop != 0 {
		t.Fatalf("scale: %+v", d)
	}
}

// The follow-up evaluation waits in the broker until its time, then
// replaces the failed allocation, carrying the reschedule event.
func TestRescheduleLaterFollowupReplacesOnTime(t *testing.T) {
	s := testServer(t, nil)
	node := testNode(t, s, 4000, 4096)
	job := testJob("soon", 1)
	job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Delay: 2 * time.Second,
		DelayFunction: structs.DelayFunctionConstant, Unlimited: true}
	evalDone(t, s, register(t, s, job).EvalID)
	a := liveAllocs(t, s, "soon")[0]
	failedAt := time.Now()
	up := &structs.Allocation{ID: a.ID, NodeID: node.ID, ClientStatus: structs.AllocClientStatusFailed,
		TaskStates: map[string]*structs.TaskState{"t": {State: structs.TaskStateDead, Failed: true, FinishedAt: failedAt}}}
	var r structs.GenericResponse
	if err := s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{Alloc: []*structs.Allocation{up}}, &r); err != nil {
		t.Fatal(err)
	}
	var repl *structs.Allocation
	waitFor(t, 15*time.Second, "the replacement", func() bool {
		for _, x := range liveAllocs(t, s, "soon") {
			if x.PreviousAllocation == a.ID {
				repl = x
				return true
			}
		}
		return false
	})
	if since := time.Since(failedAt); since < 1500*time.Millisecond {
		t.Fatalf("replaced after %v, before the 2s delay", since)
	}
	if rt := repl.RescheduleTracker; rt == nil || len(rt.Events) != 1 || rt.Events[0].PrevAllocID != a.ID || rt.Events[0].Delay != 2*time.Second {
		t.Fatalf("tracker %+v", rt)
	}
}
